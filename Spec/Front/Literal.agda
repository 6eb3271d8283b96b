{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- Numbers written in a model file (0.044715, 1e-5, 2.5e3, 2) as core
-- terms, exactly: E has no real constant, so a number d / 10^e (d and e
-- whole) is the whole number d built from `one` with + and * (binary
-- Horner: d = 2·⌊d/2⌋ + d mod 2, with 2 = 1 + 1), divided by 10^e
-- (`scaledown`, whose argument is a whole number):
--
--   5      ↦  (1 + 1) * (1 + 1) + 1
--   0.5    ↦  ((1 + 1) * (1 + 1) + 1) / 10
--   1e-5   ↦  1 / 100000
--
-- The dump holds the number exactly (a tree of ones and a power of
-- ten).  A double holds d exactly below 2^53 and 10^e up to 10^22, so
-- an evaluation in double precision gives the number correctly
-- rounded; the generated C writes 10^e as a 64-bit integer, so e is at
-- most 18.  A number past either bound is refused, naming it.  Like 0
-- and 1, such a term takes the shape its neighbour needs
-- (Spec.Front.Check's open?: it is made of One, Add, Mul and Scale).
------------------------------------------------------------------------
module Spec.Front.Literal where

open import Data.Bool using (Bool; true; false; if_then_else_)
open import Data.Nat as ℕ using (ℕ; zero; suc; _+_; _*_; _∸_; _^_; _≤ᵇ_; _<ᵇ_)
open import Data.Nat.DivMod using (_/_; _%_)
open import Data.Nat.Show using () renaming (show to showℕ)
open import Data.Product using (_×_; _,_)
open import Data.String as String using (String; _++_)
open import Relation.Binary.PropositionalEquality using (_≡_; refl)

open import Spec.Front.Term using (Tm; Zero; One; Add; Mul; Scale)
open import Spec.Front.Result

-- A decimal number as the lexer read it: digits · 10^(±expo − places).
record Decimal : Set where
  constructor decimal
  field
    text     : String        -- as written, for messages
    digits   : ℕ             -- its digits without the point: 25 for 2.5e3
    places   : ℕ             -- how many of them follow the point: 1 for 2.5e3
    negative : Bool          -- whether the exponent is negative (1e-5)
    expo     : ℕ             -- the exponent: 3 for 2.5e3, 0 without one

------------------------------------------------------------------------
-- Bounds

-- Whole numbers below this are exact in a double (53-bit significand).
exact-below : ℕ
exact-below = 9007199254740992          -- 2^53

-- At most this many decimal places: 10^18 is the largest power of ten
-- of a signed 64-bit integer (the n of scaledown in the generated C).
max-places : ℕ
max-places = 18

------------------------------------------------------------------------
-- The value as d / 10^e, d < 2^53, e ≤ 18, with no trailing zero in d
-- when e > 0 (so 0.50 and 0.5 are the same term)

private
  -- drop trailing zeros of d while e > 0 (fuel: d has fewer zeros than the text has characters)
  strip : ℕ → ℕ → ℕ → ℕ × ℕ
  strip zero    d e       = d , e
  strip (suc f) d zero    = d , zero
  strip (suc f) d (suc e) = if d % 10 ℕ.≡ᵇ 0 then strip f (d / 10) e else (d , suc e)

  too-many-digits : String → ℕ → String
  too-many-digits t d =
    "the number " ++ t ++ " has more significant digits than a double holds exactly (its digits "
    ++ showℕ d ++ " reach 2^53 = 9007199254740992): write at most 15 of them"

  too-large : String → String
  too-large t = "the number " ++ t ++ " is 2^53 = 9007199254740992 or more, past the whole "
                ++ "numbers a double holds exactly"

  too-many-places : String → ℕ → String
  too-many-places t e =
    "the number " ++ t ++ " has " ++ showℕ e ++ " decimal places; at most "
    ++ showℕ max-places ++ " are exact in the generated code (it divides by 10^" ++ showℕ e
    ++ ", past 64-bit integers): declare it a const and give its value with the weights"

  bounded : String → ℕ × ℕ → Result (ℕ × ℕ)
  bounded t (d , e) =
    if max-places <ᵇ e then fail (too-many-places t e)
    else if exact-below ≤ᵇ d then fail (if e ℕ.≡ᵇ 0 then too-large t else too-many-digits t d)
    else ok (d , e)

-- The number as (d, e), its value d / 10^e; d = 0 is the number 0.
value : Decimal → Result (ℕ × ℕ)
value (decimal t zero _ _ _) = ok (0 , 0)
value (decimal t m f true x) = bounded t (strip (String.length t) m (x + f))
value (decimal t m f false x) =
  if f ≤ᵇ x
  then (if 15 <ᵇ (x ∸ f) then fail (too-large t) else bounded t (m * 10 ^ (x ∸ f) , 0))
  else bounded t (strip (String.length t) m (f ∸ x))

------------------------------------------------------------------------
-- The term

two : Tm
two = Add One One

-- The whole number n ≥ 1 (fuel: its number of bits, at most 53 here).
private
  horner : ℕ → ℕ → Tm
  horner zero    n             = One
  horner (suc f) zero          = Zero
  horner (suc f) (suc zero)    = One
  horner (suc f) n@(suc (suc _)) =
    let doubled = if n / 2 ℕ.≡ᵇ 1 then two else Mul (horner f (n / 2)) two
    in if n % 2 ℕ.≡ᵇ 0 then doubled else Add doubled One

whole : ℕ → Tm
whole = horner 64

-- A decimal as a term, or why it is refused.
literal : Decimal → Result Tm
literal n = value n >>= λ where
  (zero , _)  → ok Zero
  (d , zero)  → ok (whole d)
  (d , e)     → ok (Scale (10 ^ e) (whole d))

-- A whole number written in an expression (2 in x * 2).
number : ℕ → Result Tm
number n = literal (decimal (showℕ n) n 0 false 0)

-- How deeply the term of a number nests (Spec.Front.Syntax counts it in
-- a binding's depth): up to two levels per binary digit, one for the
-- division.
private
  term-depth : Tm → ℕ
  term-depth (Add a b)   = suc (term-depth a ℕ.⊔ term-depth b)
  term-depth (Mul a b)   = suc (term-depth a ℕ.⊔ term-depth b)
  term-depth (Scale _ a) = suc (term-depth a)
  term-depth _           = 1

  result-depth : Result Tm → ℕ
  result-depth (ok t)   = term-depth t
  result-depth (fail _) = 1

depth : Decimal → ℕ
depth n = result-depth (literal n)

-- That of a whole number.
whole-depth : ℕ → ℕ
whole-depth n = result-depth (number n)

------------------------------------------------------------------------
-- Checked examples

private
  dec : String → ℕ → ℕ → Bool → ℕ → Decimal
  dec = decimal

_ : literal (dec "1e-5" 1 0 true 5) ≡ ok (Scale 100000 One)
_ = refl

_ : literal (dec "0.50" 50 2 false 0) ≡ ok (Scale 10 (Add (Mul two two) One))
_ = refl

_ : value (dec "0.044715" 44715 6 false 0) ≡ ok (44715 , 6)
_ = refl

_ : value (dec "2.5e3" 25 1 false 3) ≡ ok (2500 , 0)
_ = refl

_ : number 6 ≡ ok (Mul (Add two One) two)
_ = refl

_ : whole-depth 1 ≡ 1
_ = refl

_ : whole-depth 6 ≡ 4
_ = refl

_ : depth (dec "0.044715" 44715 6 false 0) ≡ 26
_ = refl

_ : literal (dec "0e-40" 0 0 true 40) ≡ ok Zero
_ = refl

_ : literal (dec "1e-19" 1 0 true 19) ≡
    fail "the number 1e-19 has 19 decimal places; at most 18 are exact in the generated code (it divides by 10^19, past 64-bit integers): declare it a const and give its value with the weights"
_ = refl

_ : literal (dec "1e16" 1 0 false 16) ≡
    fail "the number 1e16 is 2^53 = 9007199254740992 or more, past the whole numbers a double holds exactly"
_ = refl

-- the largest whole number a double holds exactly, and one past it
_ : value (dec "9007199254740991" 9007199254740991 0 false 0) ≡ ok (9007199254740991 , 0)
_ = refl

_ : value (dec "0.9007199254740992" 9007199254740992 16 false 0) ≡
    fail "the number 0.9007199254740992 has more significant digits than a double holds exactly (its digits 9007199254740992 reach 2^53 = 9007199254740992): write at most 15 of them"
_ = refl
