{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- Checked examples of the front end: each is computed by Agda when this
-- module is checked, so they document and test at once.
--
-- The main one: the paper's network written as a model file (the text
-- of models/cnn.model, comments and all: tests/test_front.py checks
-- that the file and this literal are the same text) elaborates to the
-- hand-written Spec.Model.CNN chain itself, as a term: its bindings
-- erase to the hand-written ones (same names, same core terms: the
-- dumps are the same, which tests/test_front.py checks on the printed
-- JSON too), and the chain and its context are CNN.chain and CNN.Φ.
------------------------------------------------------------------------
module Spec.Front.Examples where

open import Data.List using (List; []; _∷_)
open import Data.Maybe using (Maybe; just; nothing)
open import Data.Product using (_×_; _,_; Σ)
open import Data.String using (String)
open import Relation.Binary.PropositionalEquality using (_≡_; refl)

open import Spec.Array.Base using (ι; _⊗_; unit)
open import Spec.Lang.Syntax using (Fn; Ctx; _▹_; ar)
open import Spec.Lang.Chain using (Chain)
open import Spec.Front.Term
open import Spec.Front.Result
open import Spec.Front.Model
open import Spec.Front.Literal using (whole)
import Data.String
import Spec.Model.CNN as CNN

private
  core-of : Result Elaborated → Maybe (List (String × Tm))
  core-of (ok m)   = just (Elaborated.core m)
  core-of (fail _) = nothing

  error-of : Result Elaborated → Maybe String
  error-of (ok _)   = nothing
  error-of (fail e) = just e

  constants-of : Result Elaborated → Maybe (List String)
  constants-of (ok m)   = just (Elaborated.constants m)
  constants-of (fail _) = nothing

-- The chain a model elaborates to, with its context.
chain-of : Result Elaborated → Maybe (Σ Ctx (λ Δ → Chain (Δ ▹ ar unit ▹ ar unit)))
chain-of (ok m)   = just (_ , Elaborated.chain m)
chain-of (fail _) = nothing

------------------------------------------------------------------------
-- The paper's network

cnn-text : String
cnn-text = "
-- The paper's convolutional network (Spec/Model/CNN.agda, written as a model file).
-- Its dump is the same as that of the hand-written chain: tests/test_front.py checks it.
model cnn
target target : 10x1x1x1x1      -- the one-hot label
input  inp    : 28x28           -- the image
param  k1 : 6x5x5
param  b1 : 6
param  k2 : 12x6x5x5
param  b2 : 12
param  fc : 10x12x1x4x4
param  b  : 10
c11 = conv(inp, k1, b1)         -- 6×24×24
c1  = logistic(c11)
s1  = avgpool(c1, 2)            -- 6×12×12
c21 = conv(s1, k2, b2)          -- 12×1×8×8
c2  = logistic(c21)
s2  = avgpool(c2, 2)            -- 12×1×4×4
r1  = conv(s2, fc, b)           -- 10×1×1×1×1
output r = logistic(r1)
loss loss = sqerr(r, target)
"

_ : core-of (elaborate cnn-text) ≡ just (erase-chain CNN.chain)
_ = refl

-- and its chain is the hand-written one, as a term (its context too)
cnn-elaborates : chain-of (elaborate cnn-text) ≡ just (_ , CNN.chain)
cnn-elaborates = refl

------------------------------------------------------------------------
-- A small model in the core language, and what it elaborates to

dot-text : String
dot-text = "
model dot
input  x : 3
param  a : 3
loss   l = sum i : 3 . x[i] * a[i]     -- a scalar: the sum of a vector of shape 1
"

_ : core-of (elaborate dot-text) ≡ just (("l" , Sum (ι 3) (Mul (Sel (V 2) (V 0)) (Sel (V 1) (V 0)))) ∷ [])
_ = refl

-- a const is a base variable like a param (the dump gives it no gradient)
const-text : String
const-text = "
model scaled
input  x : 3
const  m : 3                           -- fixed: its value comes with the weights
param  a : 3
loss   l = sum i : 3 . x[i] * m[i] * a[i]
"

_ : core-of (elaborate const-text) ≡ just
      (("l" , Sum (ι 3) (Mul (Mul (Sel (V 3) (V 0)) (Sel (V 2) (V 0))) (Sel (V 1) (V 0)))) ∷ [])
_ = refl

_ : constants-of (elaborate const-text) ≡ just ("m" ∷ [])
_ = refl

-- the elementwise functions are calls, elementwise like logistic
unary-text : String
unary-text = "
model unary
input  x : 3
param  a : 3
h = relu(x * a) + exp(a) * log(a * a + 1) + recip(1 + x * x) + step(x)
loss   l = sum i : 3 . h[i]
"

_ : core-of (elaborate unary-text) ≡ just
      ( ("h" , Add (Add (Add (Un Fn.relu (Mul (V 1) (V 0)))
                             (Mul (Un Fn.exp (V 0)) (Un Fn.log (Add (Mul (V 0) (V 0)) One))))
                        (Un Fn.recip (Add One (Mul (V 1) (V 1)))))
                   (Un Fn.step (V 1)))
      ∷ ("l" , Sum (ι 3) (Sel (V 1) (V 0)))
      ∷ [])
_ = refl

-- sqrt, the function of normalisation layers: sqrt(v + e) with e a constant
sqrt-text : String
sqrt-text = "
model norm
input  x : 3
const  e : 1
loss   l = sum i : 3 . recip(sqrt(x[i] * x[i] + e))
"

_ : core-of (elaborate sqrt-text) ≡ just
      (("l" , Sum (ι 3) (Un Fn.recip (Un Fn.sqrt (Add (Mul (Sel (V 2) (V 0)) (Sel (V 2) (V 0))) (V 1)))))
       ∷ [])
_ = refl

-- erf, of the exact GELU x · (1 + erf(x · c)) / 2 (c = 1/√2 a const: the
-- language writes no decimals); derf, its derivative (2/√π) e^(−x²), is
-- an operation too
gelu-text : String
gelu-text = "
model gelu
input  x : 3
const  c : 3
h = x * (1 + erf(x * c)) / 2
loss   l = sum i : 3 . h[i] + derf(x[i])
"

_ : core-of (elaborate gelu-text) ≡ just
      ( ("h" , Scale 2 (Mul (V 1) (Add One (Un Fn.erf (Mul (V 1) (V 0))))))
      ∷ ("l" , Sum (ι 3) (Add (Sel (V 1) (V 0)) (Un Fn.derf (Sel (V 4) (V 0)))))
      ∷ [])
_ = refl

_ : error-of (elaborate "
model m
input x : 3
loss  l = sum i : 3 . exp(x, x)[i]
") ≡ just "4: binding l: exp: wrong number of arguments (2)"
_ = refl

-- max(a, b): a call with two arguments of one shape, bin max
max-text : String
max-text = "
model maxm
input  x : 3
param  a : 3
loss   l = sum i : 3 . max(x * a, a)[i]
"

_ : core-of (elaborate max-text) ≡ just
      (("l" , Sum (ι 3) (Sel (Max (Mul (V 2) (V 1)) (V 1)) (V 0))) ∷ [])
_ = refl

_ : error-of (elaborate "
model m
input x : 3
loss  l = sum i : 3 . max(x)[i]
") ≡ just "4: binding l: max: wrong number of arguments (1)"
_ = refl

------------------------------------------------------------------------
-- Rejections name the line, the binding and the shapes

_ : error-of (elaborate "
model mlp
input  x : 28x28
param  w : 10x28x28
param  b : 5
loss   l = sqerr(dense(w, x, b), dense(w, x, b))
") ≡ just "6: binding l: dense: the bias b has shape 5, expected 10"
_ = refl

_ : error-of (elaborate "
model m
input x : 3
loss  l = sum i : 3 . y[i]
") ≡ just "4: binding l: unknown name y; in scope: x, i"
_ = refl

_ : error-of (elaborate "
model m
input x : 3
loss  l = x
") ≡ just "4: binding l: the loss must be a scalar (shape 1), found shape 3"
_ = refl

_ : error-of (elaborate "
model m
input x : 3
loss  l = sum i : 3 . x[i] +
") ≡ just "4: expected an expression, found the end of the statement"
_ = refl

_ : error-of (elaborate "
model m
input x : 3
h = x
 loss l = sum i : 3 . h[i]
") ≡ just "5: expected the end of the statement of line 4, found 'loss' (a line that starts with white space continues the statement before it)"
_ = refl

-- An empty array is refused where its shape is written: a declaration's
-- and a binder's.
_ : error-of (elaborate "
model m
param w : 0x28x28
loss  l = sum i : 3 . w[0][0][0]
") ≡ just "3: expected a shape without a dimension of size 0 (arrays are never empty), found 0x28x28"
_ = refl

_ : error-of (elaborate "
model m
input x : 3
loss  l = sum i : 3x0 . x[0]
") ≡ just "4: expected a shape without a dimension of size 0 (arrays are never empty), found 3x0"
_ = refl

_ : error-of (elaborate "
model m
input x : 3x4
loss  l = sum i : 3 . x[i][0]
") ≡ just "4: binding l: [0]: an index is an index variable (the i of for i : S . a[i]), not a number"
_ = refl

------------------------------------------------------------------------
-- Softmax layers: over the last dimension, mapped over the others

-- softmax_ce(z, y) on a vector is the log-sum-exp less the target's
-- logit, as models/wide1000.model writes it by hand
_ : core-of (elaborate "
model ce
input  z : 3
target y : 3
loss   l = softmax_ce(z, y)
") ≡ core-of (elaborate "
model ce
input  z : 3
target y : 3
loss   l = logsumexp(z) - (sum j : 3 . y[j] * z[j])
")
_ = refl

-- on a matrix, one value per row, and log_softmax per row
_ : core-of (elaborate "
model ce
input  z : 2x3
target y : 2x3
c = softmax_ce(z, y)
s = log_softmax(z)
loss   l = sum t : 2 . c[t] + s[t][0]
") ≡ core-of (elaborate "
model ce
input  z : 2x3
target y : 2x3
c = for t : 2 . logsumexp(z[t]) - (sum j : 3 . y[t][j] * z[t][j])
s = for t : 2 . for i : 3 . z[t][i] - logsumexp(z[t])
loss   l = sum t : 2 . c[t] + s[t][0]
")
_ = refl

_ : error-of (elaborate "
model m
input  z : 4
target y : 3
loss   l = softmax_ce(z, y)
") ≡ just "5: binding l: softmax_ce: the target y has shape 3, expected 4"
_ = refl

------------------------------------------------------------------------
-- Numbers: whole numbers and decimals are arrays of ones, + and *,
-- divided by a power of ten (Spec.Front.Literal), of the shape their
-- neighbour needs

_ : core-of (elaborate "
model lit
input  x : 3
loss   l = sum i : 3 . (x * 0.5 + 2.5e1)[i] * 1e-5 * 2
") ≡ just (("l" , Sum (ι 3) (Mul (Mul (Sel (Add (Mul (V 1) (Scale 10 (whole 5))) (whole 25)) (V 0))
                                      (Scale 100000 One))
                                 (whole 2))) ∷ [])
_ = refl

-- a sum of numbers takes its shape from beside it too
_ : core-of (elaborate "
model lit
input  x : 3
loss   l = sum i : 3 . x[i] * (1 + 1)
") ≡ just (("l" , Sum (ι 3) (Mul (Sel (V 1) (V 0)) (Add One One))) ∷ [])
_ = refl

_ : error-of (elaborate "
model m
input x : 3
loss  l = sum i : 3 . x[i] * 1e-19
") ≡ just ("4: binding l: the number 1e-19 has 19 decimal places; at most 18 are exact in the "
           Data.String.++ "generated code (it divides by 10^19, past 64-bit integers): declare it a "
           Data.String.++ "const and give its value with the weights")
_ = refl

_ : error-of (elaborate "
model m
input x : 3
loss  l = 0.5
") ≡ just "4: binding l: the shape of a number is not known here: use it beside an array (as in x * 1 or x + 0.5)"
_ = refl

_ : error-of (elaborate "
model m
input x : 3
loss  l = sum i : 3 . x[i] * .5
") ≡ just "4: expected an expression, found '.': a decimal number starts with a digit (0.5, not .5)"
_ = refl

_ : error-of (elaborate "
model m
input x : 4x4
loss  l = sum i : 2x2 . maxpool(x, 2.5)[i]
") ≡ just ("4: binding l: maxpool: argument 2 is the number 2.5; a layer takes arrays (a number "
           Data.String.++ "in one, as x * 2.5, takes its shape) and whole numbers")
_ = refl
