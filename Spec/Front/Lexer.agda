{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- Tokens of the model language, with the line and column they start
-- at.  Comments run from `--` or `#` to the end of the line.  A shape
-- is digits joined by `x` or `×` (28x28); a lone number is a number;
-- digits with a fraction, an exponent or both (0.5, 1e-5, 2.5E+3) are
-- a decimal (Spec.Front.Literal).
-- A statement starts at a token in column 0, so a line that starts
-- with white space continues the statement before it.
------------------------------------------------------------------------
module Spec.Front.Lexer where

open import Data.Bool using (Bool; true; false; _∧_; _∨_; if_then_else_)
open import Data.Maybe using (Maybe; just; nothing)
open import Data.Char as Char using (Char)
open import Data.List as List using (List; []; _∷_; length)
open import Data.Nat as ℕ using (ℕ; zero; suc; _+_; _*_)
open import Data.Product using (_×_; _,_)
open import Data.String as String using (String)

open import Spec.Front.Literal using (Decimal; decimal)

data Tok : Set where
  word : String → Tok          -- a name or a keyword
  nat  : ℕ → Tok
  dec  : Decimal → Tok         -- 0.044715, 1e-5, 2.5e3
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

  -- What follows a decimal's first digits: the digits after its point, its exponent's
  -- sign and digits, how many characters they take, and the rest.
  record Tail : Set where
    constructor tail
    field
      fraction : List Char
      negative : Bool
      expo     : List Char
      used     : ℕ
      rest     : List Char

  Exp : Set
  Exp = Bool × List Char × ℕ × List Char     -- negative?, digits, characters used, rest

  -- an exponent's digits (at least one), k characters after its start
  expDigits : Bool → ℕ → List Char → Maybe Exp
  expDigits neg k (d ∷ cs) with Char.isDigit d
  ... | true  = let (ds , rest) = span Char.isDigit (d ∷ cs) in just (neg , ds , k + length ds , rest)
  ... | false = nothing
  expDigits neg k [] = nothing

  exponent : List Char → Maybe Exp
  exponent ('e' ∷ '-' ∷ cs) = expDigits true 2 cs
  exponent ('e' ∷ '+' ∷ cs) = expDigits false 2 cs
  exponent ('e' ∷ cs)       = expDigits false 1 cs
  exponent ('E' ∷ '-' ∷ cs) = expDigits true 2 cs
  exponent ('E' ∷ '+' ∷ cs) = expDigits false 2 cs
  exponent ('E' ∷ cs)       = expDigits false 1 cs
  exponent _                = nothing

  fraction : List Char → Maybe (List Char × List Char)    -- the digits after a point, the rest
  fraction ('.' ∷ d ∷ cs) with Char.isDigit d
  ... | true  = just (span Char.isDigit (d ∷ cs))
  ... | false = nothing
  fraction _ = nothing

  decimalTail : List Char → Maybe Tail
  decimalTail cs with fraction cs
  ... | just (fs , rest) with exponent rest
  ...   | just (neg , es , k , rest′) = just (tail fs neg es (suc (length fs) + k) rest′)
  ...   | nothing                     = just (tail fs false [] (suc (length fs)) rest)
  decimalTail cs | nothing with exponent cs
  ...   | just (neg , es , k , rest′) = just (tail [] neg es k rest′)
  ...   | nothing                     = nothing

  -- The token of a number starting with the digit x, how many characters it takes after x,
  -- and the rest (fuel for moreDims).
  numeral : ℕ → Char → List Char → Tok × ℕ × List Char
  numeral f x cs with span Char.isDigit cs
  ... | ds , rest with decimalTail rest
  ...   | just (tail fs neg es k rest′) =
    dec (decimal (String.fromList (List.take (suc (length ds) + k) (x ∷ cs)))
                 (number (x ∷ ds List.++ fs)) (length fs) neg (number es)) ,
    length ds + k , rest′
  ...   | nothing with moreDims f rest
  ...     | []     , k , rest′ = nat (number (x ∷ ds)) , length ds + k , rest′
  ...     | m ∷ ms , k , rest′ = dims (number (x ∷ ds)) (m ∷ ms) , length ds + k , rest′

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
    let (t , k , rest) = numeral f x cs in token l c t ∷ go f l (c + suc k) rest
  ... | false | false | false | true  = token l c (sym x) ∷ go f l (suc c) cs
  ... | false | false | false | false = token l c (bad x) ∷ go f l (suc c) cs

-- The tokens of a text; lines count from 1.  (The fuel is the text's
-- length, counted on a list of its own: the characters go reads are
-- then made as it reads them, so an error near the start of a large
-- file is found without holding the whole file as a list.)
tokens : String → List Token
tokens s = go (suc (String.length s)) 1 0 (String.toList s)
