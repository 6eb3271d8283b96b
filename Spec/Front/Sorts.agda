{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- The sorts of the variables in scope, by level, for the elaborator.
--
-- A variable of a model is a de Bruijn index; its sort is Γ ‼ n, which
-- walks n cells of the context.  In a chain of n bindings that each
-- read a parameter declared at the top, that is Θ(n²) over the file.
-- `Sorts Γ` keeps the same sorts in a trie keyed by level (size ∸ 1 ∸
-- index, Spec.Lang.Trie), with the evidence that what it holds is
-- what Γ has, so `lookup` costs O(log n) and still returns a variable
-- of Γ (its evidence is the trie's, not a walk).
--
--   lookup (Γ ▹ ar s ▹ ix u) σ 1 ≡ just (ar s , var# 1 _ , refl)
--
-- A lookup the trie cannot answer (an index out of scope) falls back
-- to Γ ‼ n: the result is the same either way.  (A definition that
-- carries evidence: `_▸ˢ_` builds it from the trie's laws,
-- Spec.Proofs.Trie.)
------------------------------------------------------------------------
module Spec.Front.Sorts where

open import Data.Maybe using (Maybe; just; nothing)
open import Data.Nat using (ℕ; zero; suc; _∸_; _<_; s≤s)
open import Data.Nat.Properties using (_<?_; <⇒≢)
open import Data.Nat.Binary using (fromℕ)
open import Data.Product using (Σ; _,_)
open import Relation.Binary.PropositionalEquality using (_≡_; refl; sym; trans)
open import Relation.Nullary using (yes; no)

open import Spec.Lang.Syntax
open import Spec.Lang.Trie using (Trie; leaf; at; modify)
open import Spec.Front.Term using (var-index)
open import Spec.Proofs.Trie using (at-modify-same; at-modify-other; fromℕ-injective; level-below)

private
  variable
    Γ : Ctx

record Sorts (Γ : Ctx) : Set where
  constructor sorts
  field
    size  : ℕ
    trie  : Trie (Maybe IS)
    sound : ∀ n {is} → n < size → at nothing trie (fromℕ (size ∸ suc n)) ≡ just is → Γ ‼ n ≡ just is

infixl 5 _▸ˢ_

-- one variable more (the next level)
_▸ˢ_ : Sorts Γ → (a : IS) → Sorts (Γ ▹ a)
_▸ˢ_ {Γ} (sorts m t h) a = sorts (suc m) t′ sound′
  where
    t′ = modify nothing (fromℕ m) (λ _ → just a) t
    sound′ : ∀ n {is} → n < suc m → at nothing t′ (fromℕ (suc m ∸ suc n)) ≡ just is → (Γ ▹ a) ‼ n ≡ just is
    sound′ zero    _           eq = trans (sym (at-modify-same nothing t (fromℕ m) _)) eq
    sound′ (suc n) (s≤s n<m) eq =
      h n n<m (trans (sym (at-modify-other nothing t (fromℕ m) (fromℕ (m ∸ suc n)) _
                             λ e → <⇒≢ (level-below m n n<m) (sym (fromℕ-injective e))))
                     eq)

-- the sorts of a whole context (O(n log n), once)
sorts-of : (Γ : Ctx) → Sorts Γ
sorts-of ε       = sorts 0 leaf λ n ()
sorts-of (Γ ▹ a) = sorts-of Γ ▸ˢ a

Var : Ctx → ℕ → Set
Var Γ n = Σ IS λ is → Σ (is ∈ Γ) λ x → var-index x ≡ n

-- the variable at index n, by walking the context (what lookup falls back to)
walk : (Γ : Ctx) (n : ℕ) (r : Maybe IS) → Γ ‼ n ≡ r → Maybe (Var Γ n)
walk Γ n (just is) p = just (is , var# n p , refl)
walk Γ n nothing   _ = nothing

-- the variable at index n, with its sort, from the trie
lookup : (Γ : Ctx) → Sorts Γ → (n : ℕ) → Maybe (Var Γ n)
lookup Γ (sorts m t h) n with n <? m
... | no _   = walk Γ n (Γ ‼ n) refl
... | yes lt = found (at nothing t (fromℕ (m ∸ suc n))) refl
  where
    found : (r : Maybe IS) → at nothing t (fromℕ (m ∸ suc n)) ≡ r → Maybe (Var Γ n)
    found (just is) eq = just (is , var# n (h n lt eq) , refl)
    found nothing   _  = walk Γ n (Γ ‼ n) refl
