{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- Renaming by an offset: the scope Δ seen inside a larger scope Φ that
-- has m more innermost variables (`Offset Δ Φ`: the number m and the
-- evidence `outer m Φ ≡ Δ`).  `shift` adds m to a variable's index:
-- one addition at run time, wherever the variable is (the evidence, an
-- equation, is erased), where m-fold weakening (λ x → ρ (vₛ (vₛ x)),
-- composed once per binding) would walk m closures.  Spec.Lang.Chain's
-- reverse pass renames every binding into the full scope this way;
-- Spec.Proofs.Shift shows it is the composed renaming, variable for
-- variable.
------------------------------------------------------------------------
module Spec.Lang.Shift where

open import Data.Nat using (ℕ; zero; suc; _+_)
open import Relation.Binary.PropositionalEquality using (_≡_; refl; trans; cong)

open import Spec.Lang.Syntax
open import Spec.Lang.Subst using (Ren)

private
  variable
    Δ Φ : Ctx
    is  : IS
    m   : ℕ

-- Γ without its m innermost variables (ε if it has fewer).
outer : ℕ → Ctx → Ctx
outer zero    Γ       = Γ
outer (suc m) ε       = ε
outer (suc m) (Γ ▹ _) = outer m Γ

‼-outer : ∀ m Γ n → Γ ‼ (m + n) ≡ outer m Γ ‼ n
‼-outer zero    Γ       n = refl
‼-outer (suc m) ε       n = refl
‼-outer (suc m) (Γ ▹ _) n = ‼-outer m Γ n

-- Δ is Φ without its `by` innermost variables.
record Offset (Δ Φ : Ctx) : Set where
  constructor offset
  field
    by      : ℕ
    outer-≡ : outer by Φ ≡ Δ

shift : Offset Δ Φ → Ren Δ Φ
shift {Φ = Φ} (offset m eq) (var# n p) = var# (m + n) (trans (‼-outer m Φ n) (trans (cong (_‼ n) eq) p))

-- no offset
off₀ : Offset Φ Φ
off₀ = offset 0 refl

private
  outer-suc : ∀ m Γ → outer (suc m) Γ ≡ outer 1 (outer m Γ)
  outer-suc zero    Γ       = refl
  outer-suc (suc m) ε       = refl
  outer-suc (suc m) (Γ ▹ _) = outer-suc m Γ

-- one variable further in
off₁ : Offset (Δ ▹ is) Φ → Offset Δ Φ
off₁ {Φ = Φ} (offset m eq) = offset (suc m) (trans (outer-suc m Φ) (cong (outer 1) eq))

-- one binding (a placeholder and its variable) further in
off₂ : ∀ {ip} → Offset (Δ ▹ ip ▹ is) Φ → Offset Δ Φ
off₂ o = off₁ (off₁ o)
