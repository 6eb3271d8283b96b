{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- The network with each layer kept (Spec.CNN.Array.forward-via) is the
-- network: when keep a is a at every position, forward-via keep is
-- forward at every position.  By congruence, layer by layer: the
-- convolutions' sums (sum-zipWith-K, sum-cong), the pooling's sums and
-- the elementwise logistic read their operand only at positions.
-- (`Main check-forward` runs forward-via memo, Spec.Array.Memo.memo-≗
-- being the hypothesis.)  Every array is given explicitly, the layers
-- through `let` (substituted, so the types name the layer functions
-- themselves): left to unification, or named by definitions, the
-- layers would be compared by evaluating the network's sums.
------------------------------------------------------------------------
open import Spec.Scalar using (Scalar; Fn)

module Spec.Proofs.CNN.Via (𝕊 : Scalar) where

open import Data.Nat as ℕ using (ℕ)
open import Relation.Binary.PropositionalEquality

open import Spec.Array.Base
open import Spec.Array.Slide using (slide)
open import Spec.Array.Block using (block)
open import Spec.Array.Properties using (sum-zipWith-K; sum-cong)
open import Spec.CNN.Array 𝕊

open Scalar 𝕊 using (R; 0#; _+_; _*_; scaledown; fn)

private
  variable
    s p t u q : S

conv-cong : (sp : s + p ≈ t) (a a′ : Ar t R) (w : Ar s R) (su : suc p ≈ u)
          → a ≗ a′ → conv sp a w su ≗ conv sp a′ w su
conv-cong sp a a′ w su e j =
  trans (sum-zipWith-K _+_ 0# (λ i → map (_* w i) (slide i sp a su)) j)
        (trans (sum-cong _+_ 0# {a = λ i → slide i sp a su j * w i}
                                {b = λ i → slide i sp a′ su j * w i}
                                λ i → cong (_* w i) (e _))
               (sym (sum-zipWith-K _+_ 0# (λ i → map (_* w i) (slide i sp a′ su)) j)))

mconv-cong : (sp : s + p ≈ t) (a a′ : Ar t R) (w : Ar (u ⊗ s) R) (b : Ar u R)
             (su : suc p ≈ q) → a ≗ a′ → mconv sp a w b su ≗ mconv sp a′ w b su
mconv-cong sp a a′ w b su e (i ⊗ j) = cong (_+ b i) (conv-cong sp a a′ (nest w i) su e j)

avgp₂-cong : (m n : ℕ) (a a′ : Ar (ι (m ℕ.* 2) ⊗ ι (n ℕ.* 2)) R)
           → a ≗ a′ → avgp₂ m n a ≗ avgp₂ m n a′
avgp₂-cong m n a a′ e i =
  cong (scaledown 4) (sum-cong _+_ 0# {a = nest (block (ι ⊗ ι) a) i}
                                      {b = nest (block (ι ⊗ ι) a′) i} λ j → e _)

-- each layer function reads the layer below only at positions
s₁-cong : (c c′ : Ar C₁ R) → c ≗ c′ → s₁-of c ≗ s₁-of c′
s₁-cong c c′ e (i ⊗ j) = avgp₂-cong 12 12 (nest c i) (nest c′ i) (λ k → e (i ⊗ k)) j

c₂-cong : (x x′ : Ar S₁ R) (k₂ : Ar K₂ R) (b₂ : Ar B₂ R) → x ≗ x′
        → c₂-of x k₂ b₂ ≗ c₂-of x′ k₂ b₂
c₂-cong x x′ k₂ b₂ e i =
  cong (fn Fn.logistic) (mconv-cong (ι ⊗ (ι ⊗ ι)) x x′ k₂ b₂ (ι ⊗ (ι ⊗ ι)) e i)

s₂-cong : (c c′ : Ar C₂ R) → c ≗ c′ → s₂-of c ≗ s₂-of c′
s₂-cong c c′ e (i ⊗ (j ⊗ k)) =
  avgp₂-cong 4 4 (nest (nest c i) j) (nest (nest c′ i) j) (λ l → e (i ⊗ (j ⊗ l))) k

r-cong : (x x′ : Ar S₂ R) (fc : Ar FC R) (b : Ar B R) → x ≗ x′ → r-of x fc b ≗ r-of x′ fc b
r-cong x x′ fc b e i =
  cong (fn Fn.logistic) (mconv-cong (ι ⊗ (ι ⊗ (ι ⊗ ι))) x x′ fc b (ι ⊗ (ι ⊗ (ι ⊗ ι))) e i)

forward-via-≗ : (keep : ∀ {s} → Ar s R → Ar s R) (kept : ∀ {s} (a : Ar s R) → keep a ≗ a)
  → ∀ inp k₁ b₁ k₂ b₂ fc b
  → forward-via keep inp k₁ b₁ k₂ b₂ fc b ≗ forward inp k₁ b₁ k₂ b₂ fc b
forward-via-≗ keep kept inp k₁ b₁ k₂ b₂ fc b =
  let c₁  = c₁-of inp k₁ b₁
      c₁′ = keep c₁
      s₁  = s₁-of c₁
      s₁′ = keep (s₁-of c₁′)
      c₂  = c₂-of s₁ k₂ b₂
      c₂′ = keep (c₂-of s₁′ k₂ b₂)
      s₂  = s₂-of c₂
      s₂′ = keep (s₂-of c₂′)
      e₁ : c₁′ ≗ c₁
      e₁ = kept c₁
      e₂ : s₁′ ≗ s₁
      e₂ j = trans (kept (s₁-of c₁′) j) (s₁-cong c₁′ c₁ e₁ j)
      e₃ : c₂′ ≗ c₂
      e₃ j = trans (kept (c₂-of s₁′ k₂ b₂) j) (c₂-cong s₁′ s₁ k₂ b₂ e₂ j)
      e₄ : s₂′ ≗ s₂
      e₄ j = trans (kept (s₂-of c₂′) j) (s₂-cong c₂′ c₂ e₃ j)
  in λ i → trans (kept (r-of s₂′ fc b) i) (r-cong s₂′ s₂ fc b e₄ i)
