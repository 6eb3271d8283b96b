{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- The executable scalar instance: IEEE-754 double precision.
------------------------------------------------------------------------
module Spec.Scalar.Float where

open import Data.Float as Float using (Float)
open import Spec.Scalar using (Scalar)

float : Scalar
float = record
  { R         = Float
  ; 0#        = 0.0
  ; 1#        = 1.0
  ; _+_       = Float._+_
  ; _*_       = Float._*_
  ; -_        = Float.-_
  ; logistic  = λ x → 1.0 Float.÷ (1.0 Float.+ Float.e^ (Float.- x))
  ; scaledown = λ n x → x Float.÷ Float.fromℕ n
  }
