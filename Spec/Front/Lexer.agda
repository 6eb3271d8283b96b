{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- Tokens of the model language, with the line and column they start
-- at.  Comments run from `--` or `#` to the end of the line.  A shape
-- is digits joined by `x` or `×` (28x28); a lone number is a number.
-- A statement starts at a token in column 0, so a line that starts
-- with white space continues the statement before it.
------------------------------------------------------------------------
module Spec.Front.Lexer where

open import Data.Bool using (Bool; true; false; _∧_; _∨_; if_then_else_)
open import Data.Char as Char using (Char)
open import Data.List as List using (List; []; _∷_; length)
open import Data.Nat as ℕ using (ℕ; zero; suc; _+_; _*_)
open import Data.Product using (_×_; _,_)
open import Data.String as String using (String)

data Tok : Set where
  word : String → Tok          -- a name or a keyword
  nat  : ℕ → Tok
  dims : ℕ → List ℕ → Tok      -- a shape of two or more dimensions
  sym  : Char → Tok            -- ( ) [ ] , : . = + - * /
  bad  : Char → Tok            -- a character the language does not use

record Token : Set where
  constructor token
  field
    line col : ℕ
    tok      : Tok

------------------------------------------------------------------------
-- Characters

private
  isIdStart isIdChar isSym isBlank : Char → Bool
  isIdStart c = (Char.isAlpha c ∧ Char.isAscii c) ∨ (c Char.≈ᵇ '_')
  isIdChar c  = isIdStart c ∨ Char.isDigit c
  isBlank c   = (c Char.≈ᵇ ' ') ∨ (c Char.≈ᵇ '\t') ∨ (c Char.≈ᵇ '\r')
  isSym c     = List.any (c Char.≈ᵇ_) ('(' ∷ ')' ∷ '[' ∷ ']' ∷ ',' ∷ ':' ∷ '.' ∷ '=' ∷ '+'
                                        ∷ '-' ∷ '*' ∷ '/' ∷ [])

  isTimes : Char → Bool
  isTimes c = (c Char.≈ᵇ 'x') ∨ (c Char.≈ᵇ '×')

  digit : Char → ℕ
  digit c = Char.toℕ c ℕ.∸ Char.toℕ '0'

  -- The longest prefix of characters satisfying p, and the rest.
  span : (Char → Bool) → List Char → List Char × List Char
  span p []       = [] , []
  span p (c ∷ cs) with p c
  ... | true  = let (a , b) = span p cs in c ∷ a , b
  ... | false = [] , c ∷ cs

  number : List Char → ℕ
  number = List.foldl (λ n c → n * 10 + digit c) 0

  startsDigit : List Char → Bool
  startsDigit (c ∷ _) = Char.isDigit c
  startsDigit []      = false

  -- The rest of a shape after its first number: (x digits)*.
  moreDims : ℕ → List Char → List ℕ × ℕ × List Char      -- dims, characters used, rest
  moreDims zero    cs = [] , 0 , cs
  moreDims (suc f) (t ∷ cs) with isTimes t ∧ startsDigit cs
  ... | true  = let (ds , rest) = span Char.isDigit cs
                    (ns , k , rest′) = moreDims f rest
                in number ds ∷ ns , suc (length ds + k) , rest′
  ... | false = [] , 0 , t ∷ cs
  moreDims (suc f) [] = [] , 0 , []

  dropLine : List Char → List Char
  dropLine []         = []
  dropLine ('\n' ∷ cs) = '\n' ∷ cs
  dropLine (_ ∷ cs)   = dropLine cs

------------------------------------------------------------------------
-- The lexer (fuel: the number of characters, as every step eats one)

private
  go : ℕ → ℕ → ℕ → List Char → List Token
  go zero    l c cs = []
  go (suc f) l c [] = []
  go (suc f) l c ('\n' ∷ cs) = go f (suc l) 0 cs
  go (suc f) l c ('-' ∷ '-' ∷ cs) = go f l c (dropLine cs)
  go (suc f) l c ('#' ∷ cs) = go f l c (dropLine cs)
  go (suc f) l c (x ∷ cs) with isBlank x | isIdStart x | Char.isDigit x | isSym x
  ... | true | _ | _ | _ = go f l (suc c) cs
  ... | false | true | _ | _ =
    let (w , rest) = span isIdChar cs
    in token l c (word (String.fromList (x ∷ w))) ∷ go f l (c + suc (length w)) rest
  ... | false | false | true | _ =
    let (ds , rest) = span Char.isDigit cs
        n = number (x ∷ ds)
        (ns , k , rest′) = moreDims f rest
        t = (case ns of n)
    in token l c t ∷ go f l (c + suc (length ds) + k) rest′
    where case_of_ : List ℕ → ℕ → Tok
          case [] of n     = nat n
          case (m ∷ ms) of n = dims n (m ∷ ms)
  ... | false | false | false | true  = token l c (sym x) ∷ go f l (suc c) cs
  ... | false | false | false | false = token l c (bad x) ∷ go f l (suc c) cs

-- The tokens of a text; lines count from 1.
tokens : String → List Token
tokens s = let cs = String.toList s in go (suc (length cs)) 1 0 cs
