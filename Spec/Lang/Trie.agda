{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- Binary tries keyed by Data.Nat.Binary's numbers (bijective base 2:
-- 0, 1+2k, 2(1+k)), the key is the path: reading or changing the entry
-- of k costs O(log k), whatever else the trie holds.  A missing entry
-- reads as the default d.  Laws in Spec.Proofs.Trie.
--
--   at d (modify d (fromℕ 5) f leaf) (fromℕ 5) ≡ f d
--   at d (modify d (fromℕ 5) f leaf) (fromℕ 4) ≡ d
--
-- Used by the sparse gradient environment (Spec.Lang.AD.Sparse) and
-- by the elaborator's sorts of the variables in scope
-- (Spec.Front.Sorts), both keyed by a variable's level.
------------------------------------------------------------------------
module Spec.Lang.Trie where

open import Data.Nat.Binary using (ℕᵇ; 2[1+_]; 1+[2_]) renaming (zero to 0ᵇ)

data Trie (A : Set) : Set where
  leaf : Trie A
  node : A → Trie A → Trie A → Trie A

private
  variable
    A : Set

at : A → Trie A → ℕᵇ → A
at d leaf         k        = d
at d (node a _ _) 0ᵇ       = a
at d (node _ l _) 1+[2 k ] = at d l k
at d (node _ _ r) 2[1+ k ] = at d r k

modify : A → ℕᵇ → (A → A) → Trie A → Trie A
modify d 0ᵇ       f leaf         = node (f d) leaf leaf
modify d 1+[2 k ] f leaf         = node d (modify d k f leaf) leaf
modify d 2[1+ k ] f leaf         = node d leaf (modify d k f leaf)
modify d 0ᵇ       f (node a l r) = node (f a) l r
modify d 1+[2 k ] f (node a l r) = node a (modify d k f l) r
modify d 2[1+ k ] f (node a l r) = node a l (modify d k f r)
