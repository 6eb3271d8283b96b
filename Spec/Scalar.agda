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
--
-- The elementwise functions `Fn` (the node `un f` of E) are opaque to
-- the theorems: no law about them is assumed.  Their derivatives, and
-- max's, are declared in terms of the functions themselves and the
-- ring operations by Spec.Scalar.Derivatives (f′, max-sel):
--   logistic′ x = logistic x · (1 − logistic x)   exp′ x = exp x
--   log′ x = recip x      recip′ x = − (recip x · recip x)
--   sqrt′ x = recip (sqrt x + sqrt x)
--   erf′ x = derf x     derf′ x = − ((x + x) · derf x)
--   relu′ x = step x      step′ x = 0      detach′ x = 0
--   max′ a b = (st , 1 − st) with st = step (a − b)
-- (so relu′ 0 = step 0, which is 0 in Float: see Spec.Scalar.Float).
-- These are the only declared facts of differentiation: the sum,
-- product and chain rules of the forward derivative are a theorem,
-- evaluation over the dual numbers Dual 𝕊 (Spec.Scalar.Dual,
-- Spec.Proofs.Dual), which is itself a `Scalar`.
------------------------------------------------------------------------
module Spec.Scalar where

open import Data.Bool using (Bool)
open import Data.Nat using (ℕ)

-- The elementwise unary functions.  Use them qualified (Fn.exp): the
-- constructors are not exported unqualified by Spec.Lang.Syntax, so
-- the short names stay free for local definitions.
data Fn : Set where
  logistic   : Fn        -- 1 / (1 + e^(-x))
  exp log    : Fn        -- e^x, the natural logarithm
  recip      : Fn        -- 1 / x
  sqrt       : Fn        -- the square root (NaN below 0 in Float)
  relu       : Fn        -- x if x > 0, else 0
  step       : Fn        -- 1 if x > 0, else 0 (relu's derivative; step 0 = 0)
  detach     : Fn        -- x itself, with derivative 0 (a stop-gradient)
  erf        : Fn        -- the error function (2/√π) ∫₀ˣ e^(−t²) dt
  derf       : Fn        -- erf's derivative (2/√π) e^(−x²), a primitive of its own (E has
                         -- no constant 2/√π); its derivative is declared −2x · derf x

record Scalar : Set₁ where
  infixl 6 _+_
  infixl 7 _*_
  field
    R         : Set
    0# 1#     : R
    _+_ _*_   : R → R → R
    -_        : R → R
    fn        : Fn → R → R   -- the elementwise functions
    scaledown : ℕ → R → R    -- x / n
    max       : R → R → R    -- the larger of the two (derivative: Spec.Scalar.Derivatives)
    less      : R → R → Bool -- a < b: the comparison argmax scans with (no law assumed)
