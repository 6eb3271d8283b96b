{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- The executable scalar instance: IEEE-754 double precision.
--
-- relu x = if x ≤ 0 then 0 else x and step x = if x ≤ 0 then 0 else 1:
-- in particular step 0 = 0, so relu′ 0 = 0 (PyTorch's convention too).
-- recip 0, log of a non-positive number and sqrt of a negative one
-- follow IEEE (±inf, NaN).  detach x = x.  less is IEEE's <, so
-- argmax never moves to or from a NaN by comparison.
--
-- erf: Agda's Float has no error function, and a series or any other
-- formula written here would be a second erf, not libm's (which the
-- generated C calls: erff, erf).  This instance does not compute it:
-- erf x is NaN, so an evaluation in Agda that reaches it says so.
-- derf x = (2/√π) · e^(−x²), with 2/√π the double nearest it
-- (1.1283791670955126, the generated C's constant).
------------------------------------------------------------------------
module Spec.Scalar.Float where

open import Data.Bool using (if_then_else_)
open import Data.Float as Float using (Float)
open import Relation.Binary.PropositionalEquality using (_≡_; refl)
open import Spec.Scalar using (Scalar; Fn)

private
  fn : Fn → Float → Float
  fn Fn.logistic x = 1.0 Float.÷ (1.0 Float.+ Float.e^ (Float.- x))
  fn Fn.exp      x = Float.e^ x
  fn Fn.log      x = Float.log x
  fn Fn.recip    x = 1.0 Float.÷ x
  fn Fn.sqrt     x = Float.sqrt x
  fn Fn.relu     x = if x Float.≤ᵇ 0.0 then 0.0 else x
  fn Fn.step     x = if x Float.≤ᵇ 0.0 then 0.0 else 1.0
  fn Fn.detach   x = x
  fn Fn.erf      x = 0.0 Float.÷ 0.0
  fn Fn.derf     x = 1.1283791670955126 Float.* Float.e^ (Float.- (x Float.* x))

float : Scalar
float = record
  { R         = Float
  ; 0#        = 0.0
  ; 1#        = 1.0
  ; _+_       = Float._+_
  ; _*_       = Float._*_
  ; -_        = Float.-_
  ; fn        = fn
  ; scaledown = λ n x → x Float.÷ Float.fromℕ n
  ; max       = λ a b → if (a Float.- b) Float.≤ᵇ 0.0 then b else a
  ; less      = Float._<ᵇ_     -- IEEE's <: false whenever a NaN is involved
  }

-- the value of relu′ = step at 0 (and at -0), stated
_ : Scalar.fn float Fn.step 0.0 ≡ 0.0
_ = refl

_ : Scalar.fn float Fn.step (Float.- 0.0) ≡ 0.0
_ = refl

_ : Scalar.fn float Fn.relu (Float.- 2.0) ≡ 0.0
_ = refl

_ : Scalar.fn float Fn.step 0.5 ≡ 1.0
_ = refl
