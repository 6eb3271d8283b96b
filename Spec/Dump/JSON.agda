{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- A small JSON abstract syntax and a compact printer.
--
-- The expression dump (docs/dump-format.md) is built as a JSON value and
-- printed by `render`.  The printer emits no whitespace.  Strings are
-- escaped as RFC 8259 requires (quoted, backslash, control characters),
-- and every non-ASCII character is written as a \uXXXX escape (with a
-- surrogate pair beyond the basic plane), so the output is plain ASCII.
-- A float that is not finite has no JSON spelling and is printed as
-- null.
--
-- Printing goes through a difference list of pieces that are joined by
-- a balanced concatenation: a dump has hundreds of thousands of pieces,
-- and a right fold of string appends would be quadratic.
------------------------------------------------------------------------
module Spec.Dump.JSON where

open import Agda.Builtin.String using (primShowNat)
open import Data.Bool using (Bool; true; false; if_then_else_; _∨_)
open import Data.Char as Char using (Char)
open import Data.Float as Float using (Float)
open import Data.List as List using (List; []; _∷_)
open import Data.Nat as ℕ using (ℕ; zero; suc; _<ᵇ_; _≡ᵇ_)
open import Data.Nat.DivMod using (_/_; _%_)
open import Data.Product using (_×_; _,_)
open import Data.String as String using (String)
open import Relation.Binary.PropositionalEquality using (_≡_; refl)

------------------------------------------------------------------------
-- Values

data JSON : Set where
  null   : JSON
  bool   : Bool → JSON
  nat    : ℕ → JSON
  num    : Float → JSON
  string : String → JSON
  array  : List JSON → JSON
  object : List (String × JSON) → JSON

------------------------------------------------------------------------
-- Strings

private
  hexDigit : ℕ → Char
  hexDigit n = if n <ᵇ 10 then Char.fromℕ (48 ℕ.+ n) else Char.fromℕ (87 ℕ.+ n)

  -- \uXXXX for a code unit below 65536.
  u-escape : ℕ → List Char
  u-escape n = '\\' ∷ 'u' ∷ hexDigit (n / 4096 % 16) ∷ hexDigit (n / 256 % 16)
             ∷ hexDigit (n / 16 % 16) ∷ hexDigit (n % 16) ∷ []

  wide : ℕ → List Char
  wide n = if n <ᵇ 65536 then u-escape n
           else u-escape (55296 ℕ.+ (n ℕ.∸ 65536) / 1024)
                List.++ u-escape (56320 ℕ.+ (n ℕ.∸ 65536) % 1024)

  escapeCode : Char → ℕ → List Char
  escapeCode c n = if n ≡ᵇ 34 then '\\' ∷ '"' ∷ []
    else if n ≡ᵇ 92 then '\\' ∷ '\\' ∷ []
    else if n ≡ᵇ 10 then '\\' ∷ 'n' ∷ []
    else if n ≡ᵇ 9  then '\\' ∷ 't' ∷ []
    else if (n <ᵇ 32) ∨ (126 <ᵇ n) then wide n
    else c ∷ []

  escapeChar : Char → List Char
  escapeChar c = escapeCode c (Char.toℕ c)

-- A JSON string literal, quotes included.
quoted : String → String
quoted s = String.fromList ('"' ∷ List.concatMap escapeChar (String.toList s) List.++ '"' ∷ [])

_ : quoted "a\"b\\c\n" ≡ "\"a\\\"b\\\\c\\n\""
_ = refl

_ : quoted "ι⊗\DEL" ≡ "\"\\u03b9\\u2297\\u007f\""
_ = refl

------------------------------------------------------------------------
-- Numbers

showFloat : Float → String
showFloat x = if Float.isNaN x ∨ Float.isInfinite x then "null" else Float.show x

------------------------------------------------------------------------
-- Printing

-- The pieces of a value, in front of the pieces k.
mutual
  pieces : JSON → List String → List String
  pieces null       k = "null" ∷ k
  pieces (bool b)   k = (if b then "true" else "false") ∷ k
  pieces (nat n)    k = primShowNat n ∷ k
  pieces (num x)    k = showFloat x ∷ k
  pieces (string s) k = quoted s ∷ k
  pieces (array [])       k = "[]" ∷ k
  pieces (array (x ∷ xs)) k = "[" ∷ pieces x (elements xs ("]" ∷ k))
  pieces (object [])                k = "{}" ∷ k
  pieces (object ((f , x) ∷ fs)) k = "{" ∷ quoted f ∷ ":" ∷ pieces x (members fs ("}" ∷ k))

  elements : List JSON → List String → List String
  elements []       k = k
  elements (x ∷ xs) k = "," ∷ pieces x (elements xs k)

  members : List (String × JSON) → List String → List String
  members []             k = k
  members ((f , x) ∷ fs) k = "," ∷ quoted f ∷ ":" ∷ pieces x (members fs k)

-- Concatenation in about log₂ n rounds of pairwise appends.
private
  pairs : List String → List String
  pairs (a ∷ b ∷ xs) = (a String.++ b) ∷ pairs xs
  pairs xs           = xs

  rounds : ℕ → List String → String
  rounds _       []       = ""
  rounds _       (x ∷ []) = x
  rounds zero    xs       = String.concat xs
  rounds (suc n) xs       = rounds n (pairs xs)

concatPieces : List String → String
concatPieces xs = rounds (List.length xs) xs

render : JSON → String
render j = concatPieces (pieces j [])

_ : render (object (("a" , nat 12) ∷ ("b" , array (null ∷ bool true ∷ string "x" ∷ [])) ∷ ("c" , object []) ∷ []))
  ≡ "{\"a\":12,\"b\":[null,true,\"x\"],\"c\":{}}"
_ = refl

_ : render (array (num 1.5 ∷ num (Float.- 0.25) ∷ array [] ∷ []))
  ≡ "[1.5,-0.25,[]]"
_ = refl
