{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- Laws of the scan of Spec.Array.Argmax: it only looks at the values
-- through lt, so arrays (and comparisons) that agree pointwise have
-- the same argmax.  No function extensionality: the hypotheses are
-- pointwise.
------------------------------------------------------------------------
module Spec.Array.Argmax.Properties where

open import Data.Bool using (Bool)
open import Data.Nat using (ℕ; zero; suc)
open import Data.Fin as F using (Fin)
open import Relation.Binary.PropositionalEquality using (_≡_; refl; cong; cong₂)

open import Spec.Array.Base using (S; ι; _⊗_; P; Ar; suc_≈_)
open import Spec.Array.Argmax

private
  variable
    X Y A : Set
    s p : S

foldl₁-cong : ∀ n {f g : A → Fin n → A} → (∀ a i → f a i ≡ g a i) → ∀ a → foldl₁ n f a ≡ foldl₁ n g a
foldl₁-cong zero    h a = refl
foldl₁-cong (suc n) {f} {g} h a =
  trans′ (foldl₁-cong n (λ b i → h b (F.suc i)) (f a F.zero)) (cong (foldl₁ n _) (h a F.zero))
  where
  trans′ : ∀ {x y z : A} → x ≡ y → y ≡ z → x ≡ z
  trans′ refl q = q

foldl-cong : {f g : A → P s → A} → (∀ a i → f a i ≡ g a i) → ∀ a → foldl f a ≡ foldl g a
foldl-cong {s = ι n}   h a = foldl₁-cong n (λ b i → h b (ι i)) a
foldl-cong {s = s ⊗ p} h a =
  foldl-cong {s = s} (λ b i → foldl-cong {s = p} (λ c j → h c (i ⊗ j)) b) a

-- the argmax of values compared through lt equals the argmax of
-- other values compared through lt′, when the comparisons agree
argmax-cong : (lt : X → X → Bool) (lt′ : Y → Y → Bool) (w : suc p ≈ s) {f : Ar s X} {g : Ar s Y}
            → (∀ i j → lt (f i) (f j) ≡ lt′ (g i) (g j))
            → argmax lt w f ≡ argmax lt′ w g
argmax-cong lt lt′ w {f} {g} h =
  foldl-cong (λ best i → cong (λ b → Data.Bool.if b then i else best) (h best i)) (first w)
  where import Data.Bool
