{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- Results of the front end: a value, or a message saying what is wrong
-- and where (in the user's words).  Rejections are values, so the
-- elaborator is a total function and `Main` decides how to report.
------------------------------------------------------------------------
module Spec.Front.Result where

open import Data.String using (String; _++_)

data Result (A : Set) : Set where
  ok   : A → Result A
  fail : String → Result A

private
  variable
    A B : Set

infixl 1 _>>=_

_>>=_ : Result A → (A → Result B) → Result B
ok a   >>= f = f a
fail m >>= _ = fail m

-- Prefix the message of a failure (with the place it happened).
_at_ : Result A → String → Result A
ok a   at _ = ok a
fail m at p = fail (p ++ m)

-- The first result that is not a failure (the first failure if none).
_orElse_ : Result A → Result A → Result A
ok a   orElse _ = ok a
fail m orElse ok b   = ok b
fail m orElse fail _ = fail m
