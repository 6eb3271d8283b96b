{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- Laws of Spec.Lang.Trie: modify changes the entry of its key and no
-- other; distinct levels are distinct keys (fromℕ is injective), and
-- a level is below the length it is counted from.
------------------------------------------------------------------------
module Spec.Proofs.Trie where

open import Data.Empty using (⊥-elim)
open import Data.Nat using (suc; _∸_; _<_; s≤s)
open import Data.Nat.Properties using (m∸n≤m)
open import Data.Nat.Binary using (ℕᵇ; 2[1+_]; 1+[2_]; fromℕ; toℕ) renaming (zero to 0ᵇ)
open import Data.Nat.Binary.Properties using (toℕ-fromℕ)
open import Relation.Binary.PropositionalEquality
open import Relation.Nullary using (¬_)

open import Spec.Lang.Trie

private
  variable
    A : Set

at-modify-same : (d : A) (t : Trie A) (k : ℕᵇ) (f : A → A) → at d (modify d k f t) k ≡ f (at d t k)
at-modify-same d leaf         0ᵇ       f = refl
at-modify-same d leaf         1+[2 k ] f = at-modify-same d leaf k f
at-modify-same d leaf         2[1+ k ] f = at-modify-same d leaf k f
at-modify-same d (node a l r) 0ᵇ       f = refl
at-modify-same d (node a l r) 1+[2 k ] f = at-modify-same d l k f
at-modify-same d (node a l r) 2[1+ k ] f = at-modify-same d r k f

at-modify-other : (d : A) (t : Trie A) (k k′ : ℕᵇ) (f : A → A) → ¬ k ≡ k′
                → at d (modify d k f t) k′ ≡ at d t k′
at-modify-other d leaf         0ᵇ       0ᵇ        f ne = ⊥-elim (ne refl)
at-modify-other d leaf         0ᵇ       1+[2 k′ ] f ne = refl
at-modify-other d leaf         0ᵇ       2[1+ k′ ] f ne = refl
at-modify-other d leaf         1+[2 k ] 0ᵇ        f ne = refl
at-modify-other d leaf         1+[2 k ] 1+[2 k′ ] f ne = at-modify-other d leaf k k′ f λ eq → ne (cong 1+[2_] eq)
at-modify-other d leaf         1+[2 k ] 2[1+ k′ ] f ne = refl
at-modify-other d leaf         2[1+ k ] 0ᵇ        f ne = refl
at-modify-other d leaf         2[1+ k ] 1+[2 k′ ] f ne = refl
at-modify-other d leaf         2[1+ k ] 2[1+ k′ ] f ne = at-modify-other d leaf k k′ f λ eq → ne (cong 2[1+_] eq)
at-modify-other d (node a l r) 0ᵇ       0ᵇ        f ne = ⊥-elim (ne refl)
at-modify-other d (node a l r) 0ᵇ       1+[2 k′ ] f ne = refl
at-modify-other d (node a l r) 0ᵇ       2[1+ k′ ] f ne = refl
at-modify-other d (node a l r) 1+[2 k ] 0ᵇ        f ne = refl
at-modify-other d (node a l r) 1+[2 k ] 1+[2 k′ ] f ne = at-modify-other d l k k′ f λ eq → ne (cong 1+[2_] eq)
at-modify-other d (node a l r) 1+[2 k ] 2[1+ k′ ] f ne = refl
at-modify-other d (node a l r) 2[1+ k ] 0ᵇ        f ne = refl
at-modify-other d (node a l r) 2[1+ k ] 1+[2 k′ ] f ne = refl
at-modify-other d (node a l r) 2[1+ k ] 2[1+ k′ ] f ne = at-modify-other d r k k′ f λ eq → ne (cong 2[1+_] eq)

fromℕ-injective : ∀ {m n} → fromℕ m ≡ fromℕ n → m ≡ n
fromℕ-injective {m} {n} eq = trans (sym (toℕ-fromℕ m)) (trans (cong toℕ eq) (toℕ-fromℕ n))

-- the level of the index n in a context of length m is below m
level-below : ∀ m n → n < m → m ∸ suc n < m
level-below (suc m) n _ = s≤s (m∸n≤m m n)
