{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- The declared derivatives of the primitives: the elementwise
-- functions (f′) and max (max-sel).  They are written in terms of the
-- functions themselves and the ring operations, and are the only facts
-- about differentiation that the specification assumes: the sum,
-- product and chain rules are a theorem (Spec.Proofs.Dual: evaluation
-- over the dual numbers of Spec.Scalar.Dual).
--
-- Used by the forward derivative (Spec.Proofs.Forward, which
-- re-exports them) and by the dual numbers (Spec.Scalar.Dual).
------------------------------------------------------------------------
open import Spec.Scalar using (Scalar; Fn)

module Spec.Scalar.Derivatives (𝕊 : Scalar) where

open Scalar 𝕊

-- the declared derivatives of the elementwise functions
f′ : Fn → R → R
f′ Fn.logistic x = fn Fn.logistic x * (1# + - fn Fn.logistic x)
f′ Fn.exp      x = fn Fn.exp x
f′ Fn.log      x = fn Fn.recip x
f′ Fn.recip    x = - (fn Fn.recip x * fn Fn.recip x)
f′ Fn.sqrt     x = fn Fn.recip (fn Fn.sqrt x + fn Fn.sqrt x)
f′ Fn.relu     x = fn Fn.step x
f′ Fn.step     x = 0#
f′ Fn.detach   x = 0#
f′ Fn.erf      x = fn Fn.derf x
f′ Fn.derf     x = - ((x + x) * fn Fn.derf x)

-- the declared derivative of max: max′ a b = (st, 1 − st) with
-- st = step (a − b), so at a tie (st = step 0, 0 in Float) the
-- derivative goes to b
max-sel : R → R → R
max-sel a b = fn Fn.step (a + - b)
