{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- The rationals as a scalar structure, with its laws: a second witness
-- that the hypothesis `Laws 𝕊` of the theorems can be met, this time
-- with a genuine division in `scaledown`.
--
-- The ring operations are those of Data.Rational (normalised fractions,
-- so _≡_ is equality of rationals), and the ring laws are the standard
-- library's (Data.Rational.Properties.+-*-isCommutativeRing, present
-- in agda-stdlib 1.7.1).
--
--   scaledown n x = x · (1/n) for n ≥ 1, and x · 0 = 0 for n = 0
--                   (x / 0 is undefined; 0 is the usual total choice,
--                   and the laws hold for any fixed factor anyway)
--   relu x = x ⊔ 0,   step x = 1 if x > 0 else 0,   max = _⊔_,
--   detach x = x,   less a b = a < b
--   logistic, exp, log, recip, sqrt, erf, derf: the constant function
--                   0, as over ℤ (Spec.Scalar.Int): e^x and log x are not
--                   rational, and the theorems assume nothing of these.
------------------------------------------------------------------------
module Spec.Scalar.Rational where

open import Data.Nat using (ℕ; zero; suc)
open import Data.Integer using (+_)
open import Data.Rational using (ℚ; ↥_; _/_; 0ℚ; 1ℚ; _+_; _*_; -_; _⊔_)
open import Data.Rational.Properties
  using (+-*-isCommutativeRing; *-distribʳ-+; *-zeroˡ; *-assoc; *-comm)
open import Relation.Binary.PropositionalEquality using (_≡_; refl; trans; cong)

open import Data.Bool using (not)
import Data.Rational
open import Spec.Scalar using (Scalar; Fn)
open import Spec.Scalar.Laws using (Laws)
import Spec.Scalar.Int as Int

-- the factor that scaledown n multiplies by: 1/n, and 0 for n = 0
inverse : ℕ → ℚ
inverse zero    = 0ℚ
inverse (suc m) = + 1 / suc m

-- 1 if the argument is positive, else 0: the sign of a rational is
-- that of its numerator
step : ℚ → ℚ
step q with Int.step (↥ q)
... | + 0 = 0ℚ
... | _   = 1ℚ

fn : Fn → ℚ → ℚ
fn Fn.logistic _ = 0ℚ
fn Fn.exp      _ = 0ℚ
fn Fn.log      _ = 0ℚ
fn Fn.recip    _ = 0ℚ
fn Fn.sqrt     _ = 0ℚ
fn Fn.relu     x = x ⊔ 0ℚ
fn Fn.step     x = step x
fn Fn.detach   x = x
fn Fn.erf      _ = 0ℚ
fn Fn.derf     _ = 0ℚ

ℚ-scalar : Scalar
ℚ-scalar = record
  { R         = ℚ
  ; 0#        = 0ℚ
  ; 1#        = 1ℚ
  ; _+_       = _+_
  ; _*_       = _*_
  ; -_        = -_
  ; fn        = fn
  ; scaledown = λ n x → x * inverse n
  ; max       = _⊔_
  ; less      = λ a b → not (b Data.Rational.≤ᵇ a)
  }

-- scaledown n is multiplication by a fixed factor on the right, so its
-- laws are distributivity, the zero law and associativity/commutativity.
ℚ-laws : Laws ℚ-scalar
ℚ-laws = record
  { isCommutativeRing = +-*-isCommutativeRing
  ; scaledown-+       = λ n x y → *-distribʳ-+ (inverse n) x y
  ; scaledown-0#      = λ n → *-zeroˡ (inverse n)
  ; scaledown-*       = λ n x y →
      -- (x · c) · y ≡ x · (c · y) ≡ x · (y · c)
      trans (*-assoc x (inverse n) y) (cong (x *_) (*-comm (inverse n) y))
  }

-- a few values
_ : fn Fn.relu (- (+ 1 / 2)) ≡ 0ℚ
_ = refl

_ : fn Fn.step (+ 1 / 3) ≡ 1ℚ
_ = refl

_ : fn Fn.step 0ℚ ≡ 0ℚ
_ = refl

_ : Scalar.scaledown ℚ-scalar 4 (+ 2 / 1) ≡ + 1 / 2
_ = refl
