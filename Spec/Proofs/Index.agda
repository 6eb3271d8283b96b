{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- Laws of bounded index addition used by the optimiser's proofs:
-- `j ⊕ k` is injective in each argument (on Fin and leafwise on
-- positions), so a sum over k of "[i = j ⊕ k] f k" has at most one
-- non-zero term.
------------------------------------------------------------------------
module Spec.Proofs.Index where

open import Data.Nat as ℕ using (ℕ; suc)
import Data.Nat.Properties as ℕₚ
open import Data.Fin as F using (Fin; toℕ)
import Data.Fin.Properties as Fₚ
open import Data.Product using (_,_; proj₁; proj₂)
open import Relation.Binary.PropositionalEquality

open import Spec.Array.Base
open import Spec.Array.Index

private
  variable
    s p r u : S

⊕-injectiveʳ : ∀ {m n} (i : Fin m) {j j′ : Fin (suc n)} → i ⊕ j ≡ i ⊕ j′ → j ≡ j′
⊕-injectiveʳ i {j} {j′} eq = Fₚ.toℕ-injective (ℕₚ.+-cancelˡ-≡ (toℕ i)
  (trans (sym (toℕ-⊕ i j)) (trans (cong toℕ eq) (toℕ-⊕ i j′))))

⊕-injectiveˡ : ∀ {m n} {i i′ : Fin m} (j : Fin (suc n)) → i ⊕ j ≡ i′ ⊕ j → i ≡ i′
⊕-injectiveˡ {i = i} {i′} j eq = Fₚ.toℕ-injective (ℕₚ.+-cancelʳ-≡ (toℕ i) (toℕ i′)
  (trans (sym (toℕ-⊕ i j)) (trans (cong toℕ eq) (toℕ-⊕ i′ j))))

⊕ₚ-injectiveʳ : (su : suc p ≈ u) (sp : s + p ≈ r) (j : P s) {k k′ : P u}
              → (j ⊕ₚ k) su sp ≡ (j ⊕ₚ k′) su sp → k ≡ k′
⊕ₚ-injectiveʳ ι ι (ι j) {ι k} {ι k′} eq = cong ι (⊕-injectiveʳ j (ι-injective eq))
⊕ₚ-injectiveʳ (su ⊗ su′) (sp ⊗ sp′) (j ⊗ j′) {k ⊗ l} {k′ ⊗ l′} eq =
  cong₂ _⊗_ (⊕ₚ-injectiveʳ su sp j (proj₁ (⊗-injective eq)))
            (⊕ₚ-injectiveʳ su′ sp′ j′ (proj₂ (⊗-injective eq)))

⊕ₚ-injectiveˡ : (su : suc p ≈ u) (sp : s + p ≈ r) (j : P u) {k k′ : P s}
              → (k ⊕ₚ j) su sp ≡ (k′ ⊕ₚ j) su sp → k ≡ k′
⊕ₚ-injectiveˡ ι ι (ι j) {ι k} {ι k′} eq = cong ι (⊕-injectiveˡ j (ι-injective eq))
⊕ₚ-injectiveˡ (su ⊗ su′) (sp ⊗ sp′) (j ⊗ j′) {k ⊗ l} {k′ ⊗ l′} eq =
  cong₂ _⊗_ (⊕ₚ-injectiveˡ su sp j (proj₁ (⊗-injective eq)))
            (⊕ₚ-injectiveˡ su′ sp′ j′ (proj₂ (⊗-injective eq)))
