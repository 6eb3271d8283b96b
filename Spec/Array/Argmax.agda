{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- The first position at which an array is largest (the max-reduction
-- of E, Spec.Lang.Syntax: argmax).
--
-- Positions are visited in row-major order by a left fold (`foldl`),
-- starting from the first position (`first`, all leaves 0: the shape
-- must be non-empty, which a witness suc p ≈ s says).  The scan keeps
-- the best position so far and moves to a later one only when the
-- comparison `lt` says the best value is smaller:
--
--   best := first; for i in row-major order: if lt (f best) (f i) then best := i
--
-- which is what the generated C does (with IEEE's <: ties keep the
-- earlier position, and a NaN never moves the scan nor stops it from
-- moving past it).  Nothing is assumed about lt.
------------------------------------------------------------------------
module Spec.Array.Argmax where

open import Data.Bool using (Bool; if_then_else_)
open import Data.Nat using (ℕ; zero; suc)
open import Data.Fin as F using (Fin)

open import Spec.Array.Base using (S; ι; _⊗_; P; Ar; suc_≈_)

private
  variable
    X A : Set
    s p : S

-- the first position of a non-empty shape
first : suc p ≈ s → P s
first ι       = ι F.zero
first (w ⊗ v) = first w ⊗ first v

-- a left fold over the elements of Fin n, in increasing order
foldl₁ : ∀ n → (A → Fin n → A) → A → A
foldl₁ zero    f a = a
foldl₁ (suc n) f a = foldl₁ n (λ b i → f b (F.suc i)) (f a F.zero)

-- a left fold over the positions of s, in row-major order
foldl : (A → P s → A) → A → A
foldl {s = ι n}   f a = foldl₁ n (λ b i → f b (ι i)) a
foldl {s = s ⊗ p} f a = foldl {s = s} (λ b i → foldl {s = p} (λ c j → f c (i ⊗ j)) b) a

-- one step of the scan: move to i if the best so far is smaller there
better : (X → X → Bool) → Ar s X → P s → P s → P s
better lt f best i = if lt (f best) (f i) then i else best

argmax : (X → X → Bool) → suc p ≈ s → Ar s X → P s
argmax lt w f = foldl (better lt f) (first w)

------------------------------------------------------------------------
-- Examples (over ℕ with <)

private
  open import Data.Nat using (_<ᵇ_)
  open import Relation.Binary.PropositionalEquality using (_≡_; refl)

  v : Ar (ι 4) ℕ
  v (ι i) = lookup4 i
    where lookup4 : Fin 4 → ℕ
          lookup4 F.zero = 3
          lookup4 (F.suc F.zero) = 7
          lookup4 (F.suc (F.suc F.zero)) = 7
          lookup4 (F.suc (F.suc (F.suc F.zero))) = 1

  -- the first of the two 7s
  _ : argmax _<ᵇ_ ι v ≡ ι (F.suc F.zero)
  _ = refl
