{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- Dual numbers over a scalar structure.
--
-- `Dual 𝕊` has carrier R × R: the pair (a , a′) stands for a + a′ε
-- with ε² = 0 (a the value, a′ the tangent).  The ring operations are
-- those of such numbers: sums componentwise, and
--   (a + a′ε)(b + b′ε) = ab + (a′b + ab′)ε + a′b′ε² = ab + (a′b + ab′)ε,
-- which is the product rule.  The primitives carry their declared
-- derivatives (Spec.Scalar.Derivatives) on the tangent:
--   fn f (a , a′)         = (fn f a , f′ f a · a′)
--   max (a , a′) (b , b′) = (max a b , st · a′ + (1 − st) · b′),
--                           st = max-sel a b = step (a − b)
-- and scaledown acts componentwise (it is linear); less compares the
-- values, so an argmax over dual numbers picks the position it picks
-- over their values.  Evaluating an
-- expression over Dual 𝕊 therefore computes its value and its forward
-- derivative at once: Spec.Proofs.Dual proves that the tangent is
-- exactly D⟦_⟧ of Spec.Proofs.Forward.
--
-- Every operation is defined through the projections, so that
-- proj₁ and proj₂ of a result compute without knowing that the
-- arguments are pairs.
------------------------------------------------------------------------
open import Spec.Scalar using (Scalar; Fn)

module Spec.Scalar.Dual where

open import Data.Product using (_×_; _,_; proj₁; proj₂)

Dual : Scalar → Scalar
Dual 𝕊 = record
  { R         = R × R
  ; 0#        = 0# , 0#
  ; 1#        = 1# , 0#
  ; _+_       = λ x y → proj₁ x + proj₁ y , proj₂ x + proj₂ y
  ; _*_       = λ x y → proj₁ x * proj₁ y , proj₂ x * proj₁ y + proj₁ x * proj₂ y
  ; -_        = λ x → - proj₁ x , - proj₂ x
  ; fn        = λ f x → fn f (proj₁ x) , f′ f (proj₁ x) * proj₂ x
  ; scaledown = λ n x → scaledown n (proj₁ x) , scaledown n (proj₂ x)
  ; max       = λ x y →
      let st = max-sel (proj₁ x) (proj₁ y) in
      max (proj₁ x) (proj₁ y) , st * proj₂ x + (1# + - st) * proj₂ y
  ; less      = λ x y → less (proj₁ x) (proj₁ y)
  }
  where
  open Scalar 𝕊
  open import Spec.Scalar.Derivatives 𝕊 using (f′; max-sel)
