{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- The smallest model: the dot product of two parameter vectors, with
-- the reverse pass seeded by an input (docs/dump-format.md §6, `dot`).
--
-- Context (outermost first): seed : ι 1 (input), a b : ι 5 (params).
-- Chain: r = Σᵢ a[i] · b[i].  Seed of the reverse pass: var seed, so
-- the gradients are d_a = seed · b and d_b = seed · a.
------------------------------------------------------------------------
module Spec.Model.Dot where

open import Data.List using (List; []; _∷_)
open import Data.Product using (_,_)
open import Data.String using (String)
open import Data.Unit using (tt)

open import Spec.Array.Base using (S; ι; unit)
open import Spec.Lang.Syntax
open import Spec.Lang.Subst using (↑_)
open import Spec.Lang.Chain using (Names; Chain; ε; _▹_)

private
  variable
    Δ : Ctx

-- The base context and the names of its variables.
Γ : Ctx
Γ = ε ▹ ar unit ▹ ar (ι 5) ▹ ar (ι 5)

names : Names Γ
names = ((tt , "seed") , "a") , "b"

-- The variables of the base context that are data, not parameters.
inputs : List String
inputs = "seed" ∷ []

-- Σᵢ a[i] · b[i]
dot : E Δ (ar (ι 5)) → E Δ (ar (ι 5)) → E Δ (ar unit)
dot a b = Sum λ i → sels (↑ a) i ⊠ sels (↑ b) i

chain : Chain (Γ ▹ ar unit ▹ ar unit)
chain = ε names ▹ ("r" , dot (var v₁) (var v₀))

-- The seed, in the full scope (seed, a, b, d_r, r).
seed : E (Γ ▹ ar unit ▹ ar unit) (ar unit)
seed = var v₄
