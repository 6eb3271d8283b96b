{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- The integers as a scalar structure, with its laws: a witness that
-- the hypothesis `Laws 𝕊` of the theorems (Spec.Theorems) can be met.
--
-- The ring operations are those of Data.Integer, and the ring laws are
-- the standard library's (+-*-isCommutativeRing).  The rest is chosen
-- to be total and simple; the theorems assume nothing about it:
--
--   relu x = x ⊔ 0,   step x = 1 if x > 0 else 0,   max = _⊔_,
--   detach x = x,   less a b = a < b
--   logistic, exp, log, recip, sqrt, erf, derf: the constant function 0.
--
-- The constant 0 is an arbitrary total choice (ℤ has no e^x, no
-- logarithm, no reciprocal).  It has one pleasant side effect: the
-- derivatives that Spec.Proofs.Forward declares for these five
-- functions (logistic′ x = logistic x · (1 − logistic x), exp′ = exp,
-- log′ = recip, recip′ x = −(recip x · recip x), sqrt′ x = recip (sqrt
-- x + sqrt x)) are all 0 here, which
-- is the true derivative of a constant.
--
-- ℤ has no division, so `scaledown n` (x / n in the intended model) is
-- the identity for every n: a multiplication by the fixed constant 1,
-- which is additive, keeps 0 and moves across products, as `Laws`
-- asks.  (Spec.Scalar.Rational has a genuine x / n.)
------------------------------------------------------------------------
module Spec.Scalar.Int where

open import Data.Nat using (ℕ; suc)
open import Data.Integer using (ℤ; +_; -[1+_]; _+_; _*_; -_; _⊔_)
open import Data.Integer.Properties using (+-*-isCommutativeRing)
open import Relation.Binary.PropositionalEquality using (_≡_; refl)

open import Data.Bool using (not)
import Data.Integer
open import Spec.Scalar using (Scalar; Fn)
open import Spec.Scalar.Laws using (Laws)

-- 1 if the argument is positive, else 0
step : ℤ → ℤ
step (+ suc _) = + 1
step (+ 0)     = + 0
step -[1+ _ ]  = + 0

fn : Fn → ℤ → ℤ
fn Fn.logistic _ = + 0
fn Fn.exp      _ = + 0
fn Fn.log      _ = + 0
fn Fn.recip    _ = + 0
fn Fn.sqrt     _ = + 0
fn Fn.relu     x = x ⊔ + 0
fn Fn.step     x = step x
fn Fn.detach   x = x
fn Fn.erf      _ = + 0
fn Fn.derf     _ = + 0

ℤ-scalar : Scalar
ℤ-scalar = record
  { R         = ℤ
  ; 0#        = + 0
  ; 1#        = + 1
  ; _+_       = _+_
  ; _*_       = _*_
  ; -_        = -_
  ; fn        = fn
  ; scaledown = λ _ x → x
  ; max       = _⊔_
  ; less      = λ a b → not (b Data.Integer.≤ᵇ a)
  }

-- With scaledown the identity, its three laws hold by refl.
ℤ-laws : Laws ℤ-scalar
ℤ-laws = record
  { isCommutativeRing = +-*-isCommutativeRing
  ; scaledown-+       = λ _ _ _ → refl
  ; scaledown-0#      = λ _ → refl
  ; scaledown-*       = λ _ _ _ → refl
  }

-- a few values
_ : fn Fn.relu -[1+ 2 ] ≡ + 0
_ = refl

_ : fn Fn.relu (+ 3) ≡ + 3
_ = refl

_ : fn Fn.step (+ 0) ≡ + 0
_ = refl

_ : fn Fn.step (+ 7) ≡ + 1
_ = refl
