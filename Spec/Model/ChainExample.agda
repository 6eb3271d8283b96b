{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- The paper's chain example (§6.3): two local bindings that the reverse
-- pass shares instead of inlining (docs/dump-format.md §6, `chain`).
--
-- Context: a b : ι 5 (params).  Chain: x = a · b, y = x · x
-- (elementwise).  Seed: one on y, so d_a = 2ab² and d_b = 2ba².
------------------------------------------------------------------------
module Spec.Model.ChainExample where

open import Data.List using (List; [])
open import Data.Product using (_,_)
open import Data.String using (String)
open import Data.Unit using (tt)

open import Spec.Array.Base using (ι)
open import Spec.Lang.Syntax
open import Spec.Lang.Chain using (Names; Chain; ε; _▹_)

Γ : Ctx
Γ = ε ▹ ar (ι 5) ▹ ar (ι 5)

names : Names Γ
names = (tt , "a") , "b"

inputs : List String
inputs = []

-- Scope of x: a b.  Scope of y: a b d_x x.
chain : Chain (Γ ▹ ar (ι 5) ▹ ar (ι 5) ▹ ar (ι 5) ▹ ar (ι 5))
chain = ε names ▹ ("x" , var v₁ ⊠ var v₀)
                ▹ ("y" , var v₀ ⊠ var v₀)

seed : E (Γ ▹ ar (ι 5) ▹ ar (ι 5) ▹ ar (ι 5) ▹ ar (ι 5)) (ar (ι 5))
seed = one
