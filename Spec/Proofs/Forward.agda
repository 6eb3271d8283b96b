{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- Forward-mode derivative of E (the semantics reverse mode is checked
-- against in Spec.Proofs.AD).
--
-- A tangent environment `TEnv Γ` holds one array per array variable of
-- Γ (index variables carry no derivative).  D⟦ e ⟧ ρ v is the
-- directional derivative of ⟦ e ⟧ at ρ in the direction v: sums and
-- products by the sum and product rules, elementwise functions by the
-- chain rule, everything built from indices (selections, maps,
-- windows, blocks, conditionals) by doing the same to the tangents.
--
-- These rules are not assumptions: Spec.Proofs.Dual proves that
-- D⟦ e ⟧ ρ v is the ε-part of evaluating e over the dual numbers of
-- Spec.Scalar.Dual (Spec.Theorems, item 9), so they follow from ⟦_⟧
-- and the arithmetic of a + a′ε with ε² = 0.  The only declared facts
-- are the derivatives of the primitives, f′ and max-sel
-- (Spec.Scalar.Derivatives, re-exported here), written in terms of the
-- functions themselves and the ring operations:
--     logistic′ x = logistic x · (1 − logistic x)
--     exp′ x      = exp x
--     log′ x      = recip x
--     recip′ x    = − (recip x · recip x)
--     sqrt′ x     = recip (sqrt x + sqrt x)
--     relu′ x     = step x          (so relu′ 0 = step 0; 0 in Float)
--     step′ x     = 0
--     max′ a b    = (st , 1 − st),  st = step (a − b)
-- None of them is a law: ⟦_⟧ and the theorems hold for every choice
-- of `fn` and `max` in the Scalar record.
------------------------------------------------------------------------
open import Spec.Scalar using (Scalar)

module Spec.Proofs.Forward (𝕊 : Scalar) where

open import Data.Product using (_×_; _,_)
open import Data.Unit using (⊤; tt)

open import Spec.Array.Base as A using (S; P; Ar; K; map; zipWith; nest; unnest)
open import Spec.Array.Index using (_⊖ₚ_; _⊖ᵣₚ_)
import Spec.Array.Slide as Sl
open import Spec.Array.Block using (block; unblock)
open import Data.Nat using (zero; suc)
open import Data.Nat using (zero; suc)
open import Relation.Binary.PropositionalEquality using (refl)
open import Spec.Lang.Syntax
open import Spec.Lang.Eval 𝕊

open Scalar 𝕊 renaming (scaledown to scaledownʳ; max to maxʳ)

-- the declared derivatives of the elementwise functions (f′) and of max
-- (max-sel), re-exported
open import Spec.Scalar.Derivatives 𝕊 public using (f′; max-sel)

private
  variable
    Γ : Ctx
    s : S

------------------------------------------------------------------------
-- Tangent environments

TEnv : Ctx → Set
TEnv ε          = ⊤
TEnv (Γ ▹ ar s) = TEnv Γ × Ar s R
TEnv (Γ ▹ ix s) = TEnv Γ

tlookup : TEnv Γ → ar s ∈ Γ → Ar s R
tlookup {Γ ▹ ar _} (v , w) (var# zero refl)  = w
tlookup {Γ ▹ ar _} (v , w) (var# (suc n) p) = tlookup {Γ} v (var# n p)
tlookup {Γ ▹ ix _} v       (var# (suc n) p) = tlookup {Γ} v (var# n p)

------------------------------------------------------------------------
-- The derivative

D⟦_⟧ : E Γ (ar s) → Env Γ → TEnv Γ → Ar s R
D⟦ var x ⟧                 ρ v = tlookup v x
D⟦ zero ⟧                  ρ v = K 0#
D⟦ one ⟧                   ρ v = K 0#
D⟦ imaps e ⟧               ρ v = λ i → scal (D⟦ e ⟧ (ρ , i) v)
D⟦ sels e i ⟧              ρ v = K (D⟦ e ⟧ ρ v (⟦ i ⟧ ρ))
D⟦ imap e ⟧                ρ v = unnest λ i → D⟦ e ⟧ (ρ , i) v
D⟦ sel e i ⟧               ρ v = nest (D⟦ e ⟧ ρ v) (⟦ i ⟧ ρ)
D⟦ imapb m e ⟧             ρ v = unblock m (unnest λ i → D⟦ e ⟧ (ρ , i) v)
D⟦ selb m e i ⟧            ρ v = nest (block m (D⟦ e ⟧ ρ v)) (⟦ i ⟧ ρ)
D⟦ sum e ⟧                 ρ v = Σ λ i → D⟦ e ⟧ (ρ , i) v
D⟦ zero-but i j e ⟧        ρ v = if-eq (⟦ i ⟧ ρ ≟ₚ ⟦ j ⟧ ρ) (D⟦ e ⟧ ρ v)
D⟦ slide i sp e su ⟧       ρ v = Sl.slide (⟦ i ⟧ ρ) sp (D⟦ e ⟧ ρ v) su
D⟦ backslide i e su sp ⟧   ρ v = Sl.backslide (⟦ i ⟧ ρ) (D⟦ e ⟧ ρ v) su 0# sp
D⟦ un f e ⟧                ρ v = λ k → f′ f (⟦ e ⟧ ρ k) * D⟦ e ⟧ ρ v k
D⟦ bin plus e e₁ ⟧         ρ v = zipWith _+_ (D⟦ e ⟧ ρ v) (D⟦ e₁ ⟧ ρ v)
D⟦ bin mul e e₁ ⟧          ρ v = λ k → D⟦ e ⟧ ρ v k * ⟦ e₁ ⟧ ρ k + ⟦ e ⟧ ρ k * D⟦ e₁ ⟧ ρ v k
D⟦ bin max e e₁ ⟧          ρ v = λ k →
  max-sel (⟦ e ⟧ ρ k) (⟦ e₁ ⟧ ρ k) * D⟦ e ⟧ ρ v k + (1# + - max-sel (⟦ e ⟧ ρ k) (⟦ e₁ ⟧ ρ k)) * D⟦ e₁ ⟧ ρ v k
D⟦ scaledown n e ⟧         ρ v = map (scaledownʳ n) (D⟦ e ⟧ ρ v)
D⟦ minus e ⟧               ρ v = map -_ (D⟦ e ⟧ ρ v)
D⟦ ix-minus i j sp su e ⟧  ρ v = at ((⟦ i ⟧ ρ ⊖ₚ ⟦ j ⟧ ρ) su sp) λ k → D⟦ e ⟧ (ρ , k) v
D⟦ ix-minusᵣ i j sp su e ⟧ ρ v = at ((⟦ i ⟧ ρ ⊖ᵣₚ ⟦ j ⟧ ρ) su sp) λ k → D⟦ e ⟧ (ρ , k) v
