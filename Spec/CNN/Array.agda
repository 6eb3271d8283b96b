{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- The paper's convolutional network (§4.3) written directly on arrays.
--
-- This is the reference semantics of the network: the embedded-language
-- version (and so the generated C and CUDA) must agree with `forward`
-- here.  Everything is parameterised by the scalar operations, so the
-- same definition runs on Float (Spec.Scalar.Float) and is reasoned
-- about over any commutative ring.
--
-- Building blocks (all shape-polymorphic):
--   conv    : one multi-dimensional convolution (cross-correlation),
--             a sum over the kernel positions of weighted slides;
--   mconv   : u convolutions stacked on a new outer axis, plus biases;
--   logistic: the logistic function, elementwise;
--   avgp₂   : 2×2 average pooling, through `block`.
-- `layers` returns every intermediate layer (c₁ s₁ c₂ s₂ r) so that a
-- test can compare an implementation layer by layer; `forward` is its
-- last layer.
------------------------------------------------------------------------
open import Spec.Scalar using (Scalar; Fn)

module Spec.CNN.Array (𝕊 : Scalar) where

open import Data.Nat as ℕ using (ℕ)
open import Function using (_∘_; _$_)

open import Spec.Array.Base
open import Spec.Array.Slide using (slide)
open import Spec.Array.Block using (block)

open Scalar 𝕊 using (R; 0#; _+_; _*_; scaledown; fn)

private
  variable
    s p q t u : S

------------------------------------------------------------------------
-- Convolution

-- conv sp a w su: slide a (p + 1)-shaped window over a; for each of the
-- s kernel positions i, scale the window at offset i by w i, and add
-- the scaled windows up.  (Operands in the order of the chain in
-- Spec.Model.CNN, window · weight and sum + bias, so that the two agree
-- for every Scalar, commutative or not: Spec.Proofs.CNN.)
conv : s + p ≈ t → Ar t R → Ar s R → suc p ≈ u → Ar u R
conv sp a w su =
  sum (zipWith _+_) (K 0#) λ i → map (_* w i) (slide i sp a su)

-- u kernels at once, each followed by its bias.
mconv : s + p ≈ t → (inp : Ar t R) (w : Ar (u ⊗ s) R) (b : Ar u R)
      → suc p ≈ q → Ar (u ⊗ q) R
mconv sp inp w b su =
  unnest λ i → map (_+ b i) (conv sp inp (nest w i) su)

------------------------------------------------------------------------
-- Activation and pooling

logistic : Ar s R → Ar s R
logistic = map (fn Fn.logistic)

-- Average of each 2×2 block: the blocks keep neighbouring elements
-- together (block, not a flat reshape).
avgp₂ : (m n : ℕ) → Ar (ι (m ℕ.* 2) ⊗ ι (n ℕ.* 2)) R → Ar (ι m ⊗ ι n) R
avgp₂ m n a = map (scaledown 4 ∘ sum _+_ 0#) (nest $ block (ι ⊗ ι) a)

------------------------------------------------------------------------
-- The network

-- Shapes of the inputs (image and weights) and of every layer.
Inp K₁ B₁ K₂ B₂ FC B C₁ S₁ C₂ S₂ Out : S
Inp = ι 28 ⊗ ι 28
K₁  = ι 6 ⊗ (ι 5 ⊗ ι 5)
B₁  = ι 6
K₂  = ι 12 ⊗ (ι 6 ⊗ (ι 5 ⊗ ι 5))
B₂  = ι 12
FC  = ι 10 ⊗ (ι 12 ⊗ (ι 1 ⊗ (ι 4 ⊗ ι 4)))
B   = ι 10
C₁  = ι 6 ⊗ (ι 24 ⊗ ι 24)
S₁  = ι 6 ⊗ (ι 12 ⊗ ι 12)
C₂  = ι 12 ⊗ (ι 1 ⊗ (ι 8 ⊗ ι 8))
S₂  = ι 12 ⊗ (ι 1 ⊗ (ι 4 ⊗ ι 4))
Out = ι 10 ⊗ (ι 1 ⊗ (ι 1 ⊗ (ι 1 ⊗ ι 1)))

-- Each layer as a function of the layer below (and its weights).
c₁-of : Ar Inp R → Ar K₁ R → Ar B₁ R → Ar C₁ R
c₁-of inp k₁ b₁ = logistic $ mconv (ι ⊗ ι) inp k₁ b₁ (ι ⊗ ι)

s₁-of : Ar C₁ R → Ar S₁ R
s₁-of c₁ = unnest $ map (avgp₂ 12 12) (nest c₁)

c₂-of : Ar S₁ R → Ar K₂ R → Ar B₂ R → Ar C₂ R
c₂-of s₁ k₂ b₂ = logistic $ mconv (ι ⊗ (ι ⊗ ι)) s₁ k₂ b₂ (ι ⊗ (ι ⊗ ι))

s₂-of : Ar C₂ R → Ar S₂ R
s₂-of c₂ = unnest $ map (unnest ∘ map (avgp₂ 4 4) ∘ nest) (nest c₂)

r-of : Ar S₂ R → Ar FC R → Ar B R → Ar Out R
r-of s₂ fc b = logistic $ mconv (ι ⊗ (ι ⊗ (ι ⊗ ι))) s₂ fc b (ι ⊗ (ι ⊗ (ι ⊗ ι)))

-- All layers of one forward pass.
record Layers : Set where
  field
    c₁ : Ar C₁ R     -- first convolution + logistic
    s₁ : Ar S₁ R     -- first pooling
    c₂ : Ar C₂ R     -- second convolution + logistic
    s₂ : Ar S₂ R     -- second pooling
    r  : Ar Out R    -- fully connected layer (a convolution) + logistic

layers : (inp : Ar Inp R) (k₁ : Ar K₁ R) (b₁ : Ar B₁ R)
         (k₂ : Ar K₂ R) (b₂ : Ar B₂ R) (fc : Ar FC R) (b : Ar B R)
       → Layers
layers inp k₁ b₁ k₂ b₂ fc b = record
  { c₁ = c₁-of inp k₁ b₁
  ; s₁ = s₁-of (c₁-of inp k₁ b₁)
  ; c₂ = c₂-of (s₁-of (c₁-of inp k₁ b₁)) k₂ b₂
  ; s₂ = s₂-of (c₂-of (s₁-of (c₁-of inp k₁ b₁)) k₂ b₂)
  ; r  = r-of (s₂-of (c₂-of (s₁-of (c₁-of inp k₁ b₁)) k₂ b₂)) fc b
  }
  -- (each layer spelled out, no `where`: a proof about forward then sees
  -- the layer functions themselves, Spec.Proofs.CNN.Via)

forward : (inp : Ar Inp R) (k₁ : Ar K₁ R) (b₁ : Ar B₁ R)
          (k₂ : Ar K₂ R) (b₂ : Ar B₂ R) (fc : Ar FC R) (b : Ar B R)
        → Ar Out R
forward inp k₁ b₁ k₂ b₂ fc b = Layers.r (layers inp k₁ b₁ k₂ b₂ fc b)

------------------------------------------------------------------------
-- The same network with each layer passed through `keep` once, for an
-- executable that tabulates (keep = Spec.Array.Memo.memo: `Main
-- check-forward`): each layer is an argument of the next layer's
-- function, so a compiled program computes it once and shares it.
-- Spec.Proofs.CNN.Via.forward-via-≗: when keep a is a at every position,
-- forward-via keep is forward at every position.

forward-via : (keep : ∀ {s} → Ar s R → Ar s R)
              (inp : Ar Inp R) (k₁ : Ar K₁ R) (b₁ : Ar B₁ R)
              (k₂ : Ar K₂ R) (b₂ : Ar B₂ R) (fc : Ar FC R) (b : Ar B R)
            → Ar Out R
forward-via keep inp k₁ b₁ k₂ b₂ fc b =
  keep (r-of (keep (s₂-of (keep (c₂-of (keep (s₁-of (keep (c₁-of inp k₁ b₁)))) k₂ b₂)))) fc b)
