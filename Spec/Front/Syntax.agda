{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- The model language as written (docs/model-format.md): named, with
-- layers, before any shape is known.
--
-- A model file is a list of statements, each on its own line(s):
--   model cnn                         the model's name
--   input inp : 28x28                 data: the features
--   target t : 10                     data: the one-hot label
--   param k1 : 6x5x5                  a trainable parameter
--   const m : 10                      a fixed array (its value with the weights)
--   c1 = logistic(conv(inp, k1, b1))  a binding
--   output r = …                      the binding that is the prediction
--   loss l = sqerr(r, t)              the objective: the last statement
-- Spec.Front.Parser reads the text, Spec.Front.Expand resolves names and
-- expands layers into core terms, Spec.Front.Check gives them shapes.
------------------------------------------------------------------------
module Spec.Front.Syntax where

open import Data.Bool using (Bool; true; false; _∨_)
open import Data.List using (List; []; _∷_)
open import Data.Nat as ℕ using (ℕ; zero; suc)
open import Data.Product using (_×_)
open import Data.String using (String)

open import Spec.Array.Base using (S)
open import Spec.Front.Literal using (Decimal; whole-depth) renaming (depth to literal-depth)

------------------------------------------------------------------------
-- Expressions

data Binder : Set where
  for sum tile : Binder
  maxr         : Binder                -- max i : S . e (a scalar body)

data Raw : Set where
  name  : String → Raw
  num   : ℕ → Raw                      -- a whole number: an array, or a layer's argument
  dec   : Decimal → Raw                  -- 0.044715, 1e-5 (Spec.Front.Literal)
  shape : S → Raw                      -- a shape as an argument (div(i, 2x2))
  bind  : Binder → String → S → Raw → Raw
  sel   : Raw → Raw → Raw              -- a[i]
  add sub mul : Raw → Raw → Raw
  neg   : Raw → Raw
  scale : ℕ → Raw → Raw                -- a / n
  call  : String → List Raw → Raw      -- f(a, b, …): an operation or a layer

-- Whether r nests deeper than n levels (it looks at most n levels
-- down, so the check costs O(size) and stops early on a deep tree).
deeper : ℕ → Raw → Bool
deepers : ℕ → List Raw → Bool
deeper zero    _              = true
deeper (suc n) (name _)       = false
deeper (suc n) (num m)        = suc n ℕ.<ᵇ whole-depth m       -- the depth of its term
deeper (suc n) (dec d)        = suc n ℕ.<ᵇ literal-depth d
deeper (suc n) (shape _)      = false
deeper (suc n) (bind _ _ _ b) = deeper n b
deeper (suc n) (sel a i)      = deeper n a ∨ deeper n i
deeper (suc n) (add a b)      = deeper n a ∨ deeper n b
deeper (suc n) (sub a b)      = deeper n a ∨ deeper n b
deeper (suc n) (mul a b)      = deeper n a ∨ deeper n b
deeper (suc n) (neg a)        = deeper n a
deeper (suc n) (scale _ a)    = deeper n a
deeper (suc n) (call _ as)    = deepers n as
deepers n []       = false
deepers n (a ∷ as) = deeper n a ∨ deepers n as

-- The deepest expression a binding may be: past it the elaborated
-- terms and their gradients (which repeat the argument of every
-- elementwise function) grow quadratically with the depth, and the
-- consumers of the dump walk it recursively.  Bind a part to a name.
max-nesting : ℕ
max-nesting = 200

------------------------------------------------------------------------
-- Statements

data Role : Set where
  input target param constant : Role

data Kind : Set where
  plain output loss : Kind

data Stmt : Set where
  model : String → Stmt
  decl  : Role → String → S → Stmt
  def   : Kind → String → Raw → Stmt

-- A statement with the number of the line it starts on.
Line : Set
Line = ℕ × Stmt
