{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- Checked examples for Spec.CNN.Array, computed over the natural
-- numbers (an exact, if not very useful, scalar instance): a 1-d and a
-- 2-d convolution, a bias, and 2×2 average pooling, each checked by
-- normalisation.
-- (The whole network is too big to normalise in the type checker; it
-- is run compiled, on Float, by the executable checks.)
------------------------------------------------------------------------
module Spec.CNN.Array.Examples where

open import Data.Nat using (ℕ; zero; suc; _+_; _*_; _⊔_)
import Data.Nat
open import Data.Nat.DivMod using (_/_)
open import Data.Fin using (Fin; zero; suc; toℕ)
open import Data.Fin.Patterns
open import Relation.Binary.PropositionalEquality using (_≡_; refl)

open import Spec.Scalar using (Scalar)
open import Spec.Array.Base

-- Natural numbers as a scalar: every elementwise function (logistic
-- among them) is the identity, scaledown
-- is truncating division, max is ℕ's ⊔ and less its <.
nat : Scalar
nat = record
  { R = ℕ ; 0# = 0 ; 1# = 1 ; _+_ = _+_ ; _*_ = _*_ ; -_ = λ _ → 0
  ; fn = λ _ x → x
  ; scaledown = λ { zero x → x ; (suc n) x → x / suc n }
  ; max = _⊔_
  ; less = Data.Nat._<ᵇ_
  }

open import Spec.CNN.Array nat

-- Vectors and matrices from functions on Fin.
vec : ∀ {n} → (Fin n → ℕ) → Ar (ι n) ℕ
vec f (ι i) = f i

mat : ∀ {m n} → (Fin m → Fin n → ℕ) → Ar (ι m ⊗ ι n) ℕ
mat f (ι i ⊗ ι j) = f i j

------------------------------------------------------------------------
-- 1-d: out j = w 0 · a j + w 1 · a (j + 1)

a₁ : Ar (ι 4) ℕ
a₁ = vec λ { 0F → 1 ; 1F → 2 ; 2F → 3 ; 3F → 4 }

w₁ : Ar (ι 2) ℕ
w₁ = vec λ { 0F → 1 ; 1F → 10 }

_ : conv ι a₁ w₁ ι (ι 0F) ≡ 21
_ = refl
_ : conv ι a₁ w₁ ι (ι 2F) ≡ 43
_ = refl

------------------------------------------------------------------------
-- 2-d: a 2×2 kernel over a 3×3 image gives a 2×2 result.

img : Ar (ι 3 ⊗ ι 3) ℕ
img = mat λ i j → toℕ i * 3 + toℕ j      -- 0 … 8, row-major

ker : Ar (ι 2 ⊗ ι 2) ℕ
ker = mat λ { 0F 0F → 1 ; 0F 1F → 0 ; 1F 0F → 0 ; 1F 1F → 1 }  -- a diagonal

-- out (i, j) = img (i, j) + img (i+1, j+1)
_ : conv (ι ⊗ ι) img ker (ι ⊗ ι) (ι 0F ⊗ ι 0F) ≡ 0 + 4
_ = refl
_ : conv (ι ⊗ ι) img ker (ι ⊗ ι) (ι 1F ⊗ ι 1F) ≡ 4 + 8
_ = refl

-- mconv: two kernels (ker and twice ker) with biases 100 and 200.
kers : Ar (ι 2 ⊗ (ι 2 ⊗ ι 2)) ℕ
kers = unnest λ { (ι 0F) → ker ; (ι 1F) → map (2 *_) ker }

_ : mconv (ι ⊗ ι) img kers (vec λ { 0F → 100 ; 1F → 200 }) (ι ⊗ ι) (ι 1F ⊗ (ι 0F ⊗ ι 1F))
    ≡ 200 + 2 * (1 + 5)
_ = refl

------------------------------------------------------------------------
-- Average pooling keeps 2×2 neighbourhoods together.

m44 : Ar (ι (2 * 2) ⊗ ι (2 * 2)) ℕ
m44 = mat λ i j → toℕ i * 4 + toℕ j         -- 0 … 15

-- block (0,1) holds 2 3 6 7: average 4 (18 / 4, truncated)
_ : avgp₂ 2 2 m44 (ι 0F ⊗ ι 1F) ≡ 4
_ = refl
-- block (1,0) holds 8 9 12 13: average 10 (42 / 4, truncated)
_ : avgp₂ 2 2 m44 (ι 1F ⊗ ι 0F) ≡ 10
_ = refl
