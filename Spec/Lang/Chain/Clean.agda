{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- Placeholder-free chains, decided.
--
-- The clean scope of a chain is its base variables and bindings, without
-- the d_ placeholders; `emb c` puts it into the chain's scope.  A chain
-- is placeholder-free (`PF`) when every binding x = e is, as a term, a
-- renaming `ren (emb c) e′` of an expression e′ over the clean scope of
-- the chain before it: the side condition of Spec.Lang.Chain that the
-- types do not enforce, and a hypothesis of chain-∇-correct.
--
-- `pf?` decides it by running: it un-renames every binding
-- (Spec.Lang.Unren) through the partial inverse of emb, which is
-- undefined exactly at the placeholders.  The model elaborator
-- (Spec.Front.Model) runs it on every chain it builds, and the
-- built-in chains are checked below.
------------------------------------------------------------------------
module Spec.Lang.Chain.Clean where

open import Data.Bool using (Bool; true; false)
open import Data.Maybe using (Maybe; just; nothing; is-just)
open import Data.Product using (_×_; _,_; Σ)
open import Data.Unit using (⊤; tt)
open import Relation.Binary.PropositionalEquality using (_≡_; refl; cong)

open import Spec.Array.Base using (S)
open import Data.Nat using (zero; suc)
open import Spec.Lang.Syntax
open import Spec.Lang.Subst using (Ren; ren)
open import Spec.Lang.Chain using (Chain; ε; _▹_)
open import Spec.Lang.Unren using (Inv; unren)

private
  variable
    Δ : Ctx

------------------------------------------------------------------------
-- The clean scope

clean : Chain Δ → Ctx
clean (ε {Γ} _)             = Γ
clean (_▹_ {p = p} c _)     = clean c ▹ ar p

emb : (c : Chain Δ) → Ren (clean c) Δ
emb (ε _)   x                = x
emb (c ▹ _) (var# zero refl)  = v₀
emb (c ▹ _) (var# (suc n) p) = vₛ (vₛ (emb c (var# n p)))

-- The partial inverse of emb: a binding or a base variable, not a
-- placeholder.
emb⁻ : (c : Chain Δ) → Inv (emb c)
emb⁻ (ε _)   y                      = just (y , refl)
emb⁻ (c ▹ _) (var# zero refl)         = just (v₀ , refl)
emb⁻ (c ▹ _) (var# (suc zero) refl)   = nothing
emb⁻ (c ▹ _) (var# (suc (suc n)) p) with emb⁻ c (var# n p)
... | just (x , eq) = just (vₛ x , cong (λ z → vₛ (vₛ z)) eq)
... | nothing       = nothing

------------------------------------------------------------------------
-- Placeholder-free chains

PF : Chain Δ → Set
PF (ε _)                   = ⊤
PF (_▹_ {p = p} c (_ , e)) = PF c × Σ (E (clean c) (ar p)) (λ e′ → e ≡ ren (emb c) e′)

pf? : (c : Chain Δ) → Maybe (PF c)
pf? (ε _) = just tt
pf? (c ▹ (_ , e)) with pf? c | unren (emb c) (emb⁻ c) e
... | just pf | just pre = just (pf , pre)
... | _       | _        = nothing
