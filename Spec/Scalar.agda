{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- The scalar operations the specification is parameterised by.
--
-- Evaluation, the CNN and automatic differentiation only need these
-- operations; the laws they satisfy (a commutative ring, with
-- scaledown distributing over addition and minus the additive inverse)
-- live in Spec.Scalar.Laws and are only assumed by the theorems.
-- Float (Spec.Scalar.Float) is the executable instance: it is not a
-- ring, so the theorems say nothing exact about it (see README).
------------------------------------------------------------------------
module Spec.Scalar where

open import Data.Nat using (ℕ)

record Scalar : Set₁ where
  infixl 6 _+_
  infixl 7 _*_
  field
    R         : Set
    0# 1#     : R
    _+_ _*_   : R → R → R
    -_        : R → R
    logistic  : R → R        -- 1 / (1 + e^(-x))
    scaledown : ℕ → R → R    -- x / n
