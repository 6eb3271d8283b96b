{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- The parser of the model language: tokens → statements
-- (Spec.Front.Syntax), or a message naming the line and what was
-- expected there.
--
-- Expressions, loosest first (all binary operators associate left):
--   e ::= e + e | e - e | e * e | e / n | - e
--       | for i : SHAPE . e | sum i : SHAPE . e | tile i : SHAPE . e
--       | max i : SHAPE . e
--       | e [ e ] | f ( e , … ) | name | n | d | SHAPE | ( e )
-- (n a whole number, d a decimal: 0.5, 1e-5)
-- A binder's body extends as far right as possible.  Recursive descent
-- with fuel: every call consumes fuel, and ten times the number of
-- tokens is more than any expression needs.
------------------------------------------------------------------------
module Spec.Front.Parser where

open import Data.Bool using (Bool; true; false; if_then_else_; _∨_)
open import Data.Char as Char using (Char)
open import Data.List as List using (List; []; _∷_; length)
open import Data.Nat as ℕ using (ℕ; zero; suc; _*_)
open import Data.Nat.Show using () renaming (show to showℕ)
open import Data.Product using (_×_; _,_; proj₁; proj₂)
open import Data.String as String using (String; _++_)

open import Spec.Array.Base using (S; ι; _⊗_)
open import Spec.Front.Shape using () renaming (dims to shapeOf)
open import Spec.Front.Syntax
open import Spec.Front.Lexer
open import Spec.Front.Result
open import Spec.Front.Literal using (Decimal)

private
  Ts : Set
  Ts = List Token

  P : Set → Set
  P A = Result (A × Ts)

  showTok : Tok → String
  showTok (word w)     = "'" ++ w ++ "'"
  showTok (nat n)      = showℕ n
  showTok (dec d)      = Decimal.text d
  showTok (dims n ns)  = List.foldl (λ s m → s ++ "x" ++ showℕ m) (showℕ n) ns
  showTok (sym c)      = "'" ++ String.fromChar c ++ "'"
  showTok (bad c)      = "the character '" ++ String.fromChar c ++ "'"

  -- A '.' with digits right after it (.5) is a decimal point without a digit before it.
  found : Ts → String
  found []                    = "the end of the statement"
  found (token _ c (sym '.') ∷ token _ c′ (nat _) ∷ _) =
    if c′ ℕ.≡ᵇ suc c
    then "'.': a decimal number starts with a digit (0.5, not .5)"
    else "'.'"
  found (token _ _ t ∷ _)     = showTok t

  keyword : String → Bool
  keyword w = List.any (w String.==_) ("for" ∷ "sum" ∷ "tile" ∷ [])

------------------------------------------------------------------------
-- One statement, starting on line l

module _ (l : ℕ) where
  private
    lineOf : Ts → ℕ
    lineOf []                  = l
    lineOf (token l′ _ _ ∷ _)  = l′

    err : ∀ {A : Set} → String → Ts → Result A
    err what ts = fail (showℕ (lineOf ts) ++ ": expected " ++ what ++ ", found " ++ found ts)

    deep : ∀ {A : Set} → Result A
    deep = fail (showℕ l ++ ": the expression is nested too deeply")

    pSym : Char → Ts → Result Ts
    pSym c (token l′ k (sym d) ∷ ts) =
      if c Char.≈ᵇ d then ok ts else err ("'" ++ String.fromChar c ++ "'") (token l′ k (sym d) ∷ ts)
    pSym c ts = err ("'" ++ String.fromChar c ++ "'") ts

    pName : String → Ts → P String
    pName what (token l′ k (word w) ∷ ts) =
      if keyword w then err what (token l′ k (word w) ∷ ts) else ok (w , ts)
    pName what ts = err what ts

    -- A declared or bound shape has no dimension of size 0: an empty array
    -- holds nothing to train or compute, and would only fail later.
    nonEmpty : ∀ {A : Set} → List ℕ → Ts → A → Result A
    nonEmpty ns ts x =
      if List.any (ℕ._≡ᵇ 0) ns
      then err "a shape without a dimension of size 0 (arrays are never empty)" ts
      else ok x

    pShape : Ts → P S
    pShape (token l′ k (nat n) ∷ ts) =
      nonEmpty (n ∷ []) (token l′ k (nat n) ∷ ts) (ι n , ts)
    pShape (token l′ k (dims n ns) ∷ ts) =
      nonEmpty (n ∷ ns) (token l′ k (dims n ns) ∷ ts) (shapeOf n ns , ts)
    pShape ts = err "a shape (such as 28x28)" ts

    -- More tokens on a later line than the statement's first: an indented line, which
    -- continues the statement (say so: the usual cause is a stray indent).
    end : Ts → Result Ts
    end [] = ok []
    end ts = if lineOf ts ℕ.≡ᵇ l then err "the end of the statement" ts
             else fail (showℕ (lineOf ts) ++ ": expected the end of the statement of line "
                        ++ showℕ l ++ ", found " ++ found ts ++ " (a line that starts with "
                        ++ "white space continues the statement before it)")

  pExpr pMul pUnary pPost pAtom : ℕ → Ts → P Raw
  addLoop mulLoop postLoop : ℕ → Raw → Ts → P Raw
  pBinder : ℕ → Binder → Ts → P Raw
  pArgs : ℕ → Ts → P (List Raw)
  pArgsRest : ℕ → List Raw → Ts → P (List Raw)

  pExpr zero _ = deep
  pExpr (suc f) ts = pMul f ts >>= λ { (a , ts′) → addLoop f a ts′ }

  addLoop zero _ _ = deep
  addLoop (suc f) a (token _ _ (sym '+') ∷ ts) = pMul f ts >>= λ { (b , ts′) → addLoop f (add a b) ts′ }
  addLoop (suc f) a (token _ _ (sym '-') ∷ ts) = pMul f ts >>= λ { (b , ts′) → addLoop f (sub a b) ts′ }
  addLoop (suc f) a ts = ok (a , ts)

  pMul zero _ = deep
  pMul (suc f) ts = pUnary f ts >>= λ { (a , ts′) → mulLoop f a ts′ }

  mulLoop zero _ _ = deep
  mulLoop (suc f) a (token _ _ (sym '*') ∷ ts) = pUnary f ts >>= λ { (b , ts′) → mulLoop f (mul a b) ts′ }
  mulLoop (suc f) a (token _ _ (sym '/') ∷ token _ _ (nat (suc n)) ∷ ts) = mulLoop f (scale (suc n) a) ts
  mulLoop (suc f) a (token _ _ (sym '/') ∷ ts) = err "a positive whole number after '/'" ts
  mulLoop (suc f) a ts = ok (a , ts)

  pUnary zero _ = deep
  pUnary (suc f) (token _ _ (sym '-') ∷ ts) = pUnary f ts >>= λ { (a , ts′) → ok (neg a , ts′) }
  pUnary (suc f) (token _ _ (word "for") ∷ ts)  = pBinder f for ts
  pUnary (suc f) (token _ _ (word "sum") ∷ ts)  = pBinder f sum ts
  pUnary (suc f) (token _ _ (word "tile") ∷ ts) = pBinder f tile ts
  -- `max i : S . e` (max followed by a name; max(a, b) is the elementwise call)
  pUnary (suc f) (token _ _ (word "max") ∷ ts@(token _ _ (word _) ∷ _)) = pBinder f maxr ts
  pUnary (suc f) ts = pPost f ts

  pBinder zero _ _ = deep
  pBinder (suc f) b ts = do
    (i , ts) ← pName "an index name" ts
    ts ← pSym ':' ts
    (s , ts) ← pShape ts
    ts ← pSym '.' ts
    (body , ts) ← pExpr f ts
    ok (bind b i s body , ts)

  pPost zero _ = deep
  pPost (suc f) ts = pAtom f ts >>= λ { (a , ts′) → postLoop f a ts′ }

  postLoop zero _ _ = deep
  postLoop (suc f) a (token _ _ (sym '[') ∷ ts) = do
    (i , ts) ← pExpr f ts
    ts ← pSym ']' ts
    postLoop f (sel a i) ts
  postLoop (suc f) a ts = ok (a , ts)

  pAtom zero _ = deep
  pAtom (suc f) (token l′ k (word w) ∷ token _ _ (sym '(') ∷ ts) =
    if keyword w then err "an expression" (token l′ k (word w) ∷ ts)
    else (pArgs f ts >>= λ { (as , ts′) → ok (call w as , ts′) })
  pAtom (suc f) (token l′ k (word w) ∷ ts) =
    if keyword w then err "an expression" (token l′ k (word w) ∷ ts) else ok (name w , ts)
  pAtom (suc f) (token _ _ (nat n) ∷ ts)     = ok (num n , ts)
  pAtom (suc f) (token _ _ (dec d) ∷ ts)     = ok (dec d , ts)
  pAtom (suc f) (token _ _ (dims n ns) ∷ ts) = ok (shape (shapeOf n ns) , ts)
  pAtom (suc f) (token _ _ (sym '(') ∷ ts) = do
    (e , ts) ← pExpr f ts
    ts ← pSym ')' ts
    ok (e , ts)
  pAtom (suc f) ts = err "an expression" ts

  pArgs zero _ = deep
  pArgs (suc f) (token _ _ (sym ')') ∷ ts) = ok ([] , ts)
  pArgs (suc f) ts = pExpr f ts >>= λ { (e , ts′) → pArgsRest f (e ∷ []) ts′ }

  pArgsRest zero _ _ = deep
  pArgsRest (suc f) acc (token _ _ (sym ',') ∷ ts) =
    pExpr f ts >>= λ { (e , ts′) → pArgsRest f (e ∷ acc) ts′ }
  pArgsRest (suc f) acc (token _ _ (sym ')') ∷ ts) = ok (List.reverse acc , ts)
  pArgsRest (suc f) acc ts = err "',' or ')'" ts

  -- An expression that is the rest of the statement.
  wholeExpr : Ts → Result Raw
  wholeExpr ts = do
    (e , ts) ← pExpr (10 * suc (length ts)) ts
    _ ← end ts
    ok e

  pDecl : Role → Ts → Result Stmt
  pDecl r ts = do
    (n , ts) ← pName "a name" ts
    ts ← pSym ':' ts
    (s , ts) ← pShape ts
    _ ← end ts
    ok (decl r n s)

  pDef : Kind → Ts → Result Stmt
  pDef k ts = do
    (n , ts) ← pName "a binding's name" ts
    ts ← pSym '=' ts
    e ← wholeExpr ts
    ok (def k n e)

  -- A statement keyword only counts when a name follows it, so that
  -- `loss = …` binds a name loss and `loss loss = …` is the objective.
  statement : Ts → Result Stmt
  statement ts@(token _ _ (word k) ∷ rest@(token _ _ (word _) ∷ _)) with k
  ... | "model"  = do
    (n , rest) ← pName "the model's name" rest
    _ ← end rest
    ok (model n)
  ... | "input"  = pDecl input rest
  ... | "target" = pDecl target rest
  ... | "param"  = pDecl param rest
  ... | "const"  = pDecl constant rest
  ... | "output" = pDef output rest
  ... | "loss"   = pDef loss rest
  ... | _        = pDef plain ts
  statement ts = pDef plain ts

------------------------------------------------------------------------
-- A file: statements start in column 0

private
  -- (The pair is read by projections, not matched: the compiled fold
  -- then makes a line's group when the parser reaches it, so an error
  -- on the first line of a large file is found without reading on.)
  group : Token → Ts × List Ts → Ts × List Ts
  group t r with Token.col t
  ... | zero  = [] , (t ∷ proj₁ r) ∷ proj₂ r
  ... | suc _ = t ∷ proj₁ r , proj₂ r

  statements : List Ts → Result (List Line)
  statements [] = ok []
  statements ([] ∷ gs) = statements gs
  statements ((token l k t ∷ ts) ∷ gs) = do
    s ← statement l (token l k t ∷ ts)
    ss ← statements gs
    ok ((l , s) ∷ ss)

parse : String → Result (List Line)
parse text with List.foldr group ([] , []) (tokens text)
... | [] , gs = statements gs
... | token l _ _ ∷ _ , _ =
  fail (showℕ l ++ ": a statement must start at the beginning of a line")
