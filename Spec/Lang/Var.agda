{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- Two variables with the same index are the same variable (var-≡):
-- the evidence `Γ ‼ n ≡ just is` is unique, since sorts have decidable
-- equality (_≟IS_), so equality of Maybe IS is proof-irrelevant
-- without K (Hedberg: Axiom.UniquenessOfIdentityProofs).  Functions
-- that compute a variable's index by arithmetic (Spec.Lang.Shift,
-- Spec.Lang.Chain.Clean) show their variable is the expected one by
-- its index alone.
------------------------------------------------------------------------
module Spec.Lang.Var where

open import Axiom.UniquenessOfIdentityProofs using (module Decidable⇒UIP)
open import Data.Maybe.Properties using (≡-dec)
open import Relation.Binary.PropositionalEquality using (_≡_; refl; cong)
open import Relation.Nullary using (Dec; yes; no)

open import Spec.Array.Properties using (_≟ₛ_)
open import Spec.Lang.Syntax

private
  variable
    Γ  : Ctx
    is : IS

_≟IS_ : (a b : IS) → Dec (a ≡ b)
ix s ≟IS ix t with s ≟ₛ t
... | yes refl = yes refl
... | no  s≢t  = no λ { refl → s≢t refl }
ar s ≟IS ar t with s ≟ₛ t
... | yes refl = yes refl
... | no  s≢t  = no λ { refl → s≢t refl }
ix _ ≟IS ar _ = no λ ()
ar _ ≟IS ix _ = no λ ()

open Decidable⇒UIP (≡-dec _≟IS_) using () renaming (≡-irrelevant to at-irrelevant)

var-≡ : {x y : is ∈ Γ} → idx x ≡ idx y → x ≡ y
var-≡ {x = var# n p} {y = var# .n q} refl = cong (var# n) (at-irrelevant p q)
