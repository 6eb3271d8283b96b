{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- Faithfulness of the elaborator (stated in Spec.Theorems, item 7).
--
-- The elaborator returns every expression together with the proof that
-- it erases to the term it came from, so faithfulness is read off its
-- results; `_returns_` says that a result is a success with a given
-- expression (forgetting that proof).
------------------------------------------------------------------------
module Spec.Front.Properties where

open import Data.Product using (Σ; _,_)
open import Data.Empty using (⊥)
open import Data.String using (String)
open import Relation.Binary.PropositionalEquality using (_≡_; refl)

open import Spec.Lang.Syntax using (Ctx; IS; E)
open import Spec.Front.Term using (Tm; ⌊_⌋)
open import Spec.Front.Result using (Result; ok; fail)
open import Spec.Front.Check using (Elab; infer)
open import Spec.Front.Sorts using (Sorts)
open import Spec.Front.Model using (Elaborated; elaborate; erase-chain)

infix 4 _returns_

-- A successful elaboration to the expression e.
_returns_ : ∀ {Γ t} → Result (Elab Γ t) → Σ IS (E Γ) → Set
ok (is , e , _) returns r = (is , e) ≡ r
fail _          returns _ = ⊥

private
  faithful : ∀ {Γ t is} {e : E Γ is} (r : Result (Elab Γ t)) → r returns (is , e) → ⌊ e ⌋ ≡ t
  faithful (ok (is , e , p)) refl = p
  faithful (fail _)          ()

infer-faithful : ∀ (Γ : Ctx) (σ : Sorts Γ) (t : Tm) {is} {e : E Γ is} → infer Γ σ t returns (is , e) → ⌊ e ⌋ ≡ t
infer-faithful Γ σ t = faithful (infer Γ σ t)

elaborate-faithful : ∀ (text : String) (m : Elaborated) → elaborate text ≡ ok m
                   → erase-chain (Elaborated.chain m) ≡ Elaborated.core m
elaborate-faithful text m _ = Elaborated.faithful m
