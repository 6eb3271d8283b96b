{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- A chain that uses every constructor with a derivative (slide,
-- backslide, ix-minus, ix-minusᵣ, imapb, selb, div/mod, logistic,
-- exp, log, recip, sqrt, relu, step, max, minus, scaledown, imap/sel, imaps/sels,
-- sum), dumped as the model
-- `ops` (all context variables params, seed `one` on `loss`): the
-- tests check its dumped gradients against finite differences of its
-- dumped forward chain, so every rule of ∇ and opt that the CNN does
-- not use is exercised end to end.  log, recip and sqrt are applied
-- to 1 + x·x (positive), relu and step to values that are not 0 for the
-- tests' inputs (the tests check it), where they are differentiable;
-- likewise max to bl and lm, which do not tie there.
--
-- Context: a : ι 6, w : ι 3, m : ι 2 ⊗ ι 3.
------------------------------------------------------------------------
module Spec.Model.Ops where

open import Data.List using (List; [])
open import Data.Product using (_,_)
open import Data.String using (String)
open import Data.Unit using (tt)

open import Spec.Array.Base using (ι; _⊗_; unit; _+_≈_; suc_≈_; _*_≈_)
open import Spec.Lang.Syntax
open import Spec.Lang.Subst using (↑_; ↑↑_)
open import Spec.Lang.Chain using (Chain; ε; _▹_)

inputs : List String
inputs = []

Ops-ctx : Ctx
Ops-ctx = ε ▹ ar (ι 6) ▹ ar (ι 3) ▹ ar (ι 2 ⊗ ι 3)

private
  sp33 : ι 3 + ι 3 ≈ ι 6
  sp33 = ι
  su34 : suc ι 3 ≈ ι 4
  su34 = ι
  m23 : ι 2 * ι 3 ≈ ι 6
  m23 = ι

-- the full scope: a w m, then d_ and value of c (4), bs lm bl u (6), loss (1)
Ops-full : Ctx
Ops-full = Ops-ctx ▹ ar (ι 4) ▹ ar (ι 4) ▹ ar (ι 6) ▹ ar (ι 6) ▹ ar (ι 6) ▹ ar (ι 6)
                   ▹ ar (ι 6) ▹ ar (ι 6) ▹ ar (ι 6) ▹ ar (ι 6) ▹ ar unit ▹ ar unit

chain : Chain Ops-full
chain = let
  a = var {Γ = Ops-ctx} v₂ ; w = var {Γ = Ops-ctx} v₁ ; m = var {Γ = Ops-ctx} v₀
  -- c : ar 4, the correlation of a with w (through slide)
  C₁ = ε (((tt , "a") , "w") , "m")
       ▹ ("c" , Sum {s = ι 3} λ i → slide i sp33 (↑ a) su34 ⊠ Imapₛ λ _ → sels (↑↑ w) (↑ i))
  w = ↑↑ w ; m = ↑↑ m ; c = var v₀
  -- bs : ar 6, the transposed correlation of logistic c (through backslide)
  C₂ = C₁ ▹ ("bs" , Sum {s = ι 3} λ j →
                      backslide j (logistic (↑ c)) su34 sp33 ⊠ Imapₛ λ _ → sels (↑↑ w) (↑ j))
  w = ↑↑ w ; m = ↑↑ m ; c = ↑↑ c ; bs = var v₀
  -- lm : ar 6, left and right index subtraction
  C₃ = C₂ ▹ ("lm" , Imapₛ {s = ι 6} λ k →
                 (Sum {s = ι 3} λ j → ix-minus (↑ k) j sp33 su34
                                        (sels (↑ ↑↑ c) (var v₀) ⊠ sels (↑ ↑↑ bs) (↑↑ k)))
               ⊞ (Sum {s = ι 4} λ j → ix-minusᵣ (↑ k) j sp33 su34
                                        (sels (↑ ↑↑ w) (var v₀) ⊠ sels (↑ ↑↑ c) (↑ j))))
  m = ↑↑ m ; bs = ↑↑ bs ; lm = var v₀
  -- bl : ar 6, blocks (imapb, selb) and div/mod
  C₄ = C₃ ▹ ("bl" , imapb m23 (sel (↑ m) (var v₀) ⊠ minus (selb m23 (↑ lm) (var v₀)))
                   ⊞ (Imapₛ λ k → sels (sel (↑ m) (div m23 k)) (mod m23 k)
                                  ⊠ scaledown 3 (sels (↑ bs) k)))
  lm = ↑↑ lm ; bs = ↑↑ bs ; bl = var v₀
  -- u : ar 6, the elementwise functions and max
  C₅ = C₄ ▹ ("u" , un Fn.relu bl ⊞ un Fn.exp (scaledown 4 lm)
                  ⊞ un Fn.log (one ⊞ bs ⊠ bs) ⊠ un Fn.recip (one ⊞ lm ⊠ lm)
                  ⊞ un Fn.step lm ⊠ bs ⊞ (bl ⊔ lm) ⊞ un Fn.sqrt (one ⊞ bl ⊠ bl))
  u = var v₀
  in C₅ ▹ ("loss" , Sum λ k → sels (↑ u ⊠ ↑ u) k)

seed : E Ops-full (ar unit)
seed = one
