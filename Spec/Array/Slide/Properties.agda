{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- Laws of slide and backslide (Spec.Array.Slide).
--
--  * backslide i is a section of slide i: sliding at offset i over an
--    array backslid at offset i gives the window back (slide-backslide);
--  * outside the window at offset i, backslide is the default element;
--  * both commute with map and respect pointwise equality;
--  * in a commutative monoid with a distributing multiplication, slide
--    and backslide are adjoint for the sum of products
--    (slide-backslide-adjoint), the fact behind slide's derivative.
------------------------------------------------------------------------
module Spec.Array.Slide.Properties where

open import Data.Empty using (⊥-elim)
open import Data.Product using (∃; _,_; _×_; proj₁; proj₂)
open import Data.Sum using (_⊎_; inj₁; inj₂)
open import Relation.Nullary using (yes; no)
open import Algebra.Structures using (IsCommutativeMonoid)
open import Relation.Binary.PropositionalEquality

open import Spec.Array.Base
open import Spec.Array.Index
open import Spec.Array.Index.Properties using (⊖ₚ-⊕ₚ; _≟ₚ_; ⊕ₚ-injectiveʳ)
open import Spec.Array.Properties using (sum-cong)
open import Spec.Proofs.Sum using (sum-single; sum-zero; sum-swap; sum-*-distribˡ)
open import Spec.Array.Slide

private
  variable
    X Y Z : Set
    s p r u : S

------------------------------------------------------------------------
-- backslide inside and outside the window

-- Inside the window, backslide reads the embedded array.
backslide-⊕ₚ : (i : P s) (a : Ar u X) (su : suc p ≈ u) (def : X) (sp : s + p ≈ r)
               (k : P u) → backslide i a su def sp ((i ⊕ₚ k) su sp) ≡ a k
backslide-⊕ₚ i a su def sp k
  with ((i ⊕ₚ k) su sp ⊖ₚ i) su sp | ⊖ₚ-⊕ₚ i k su sp
... | .(yes (k , e)) | e , refl = refl

-- Outside the window it is the default element.
backslide-outside : (i : P s) (a : Ar u X) (su : suc p ≈ u) (def : X) (sp : s + p ≈ r)
                    (j : P r) → (∀ k → (i ⊕ₚ k) su sp ≢ j)
                  → backslide i a su def sp j ≡ def
backslide-outside i a su def sp j ∉ with (j ⊖ₚ i) su sp
... | yes (k , e) = ⊥-elim (∉ k e)
... | no  _       = refl

-- Each position is either in the window (and backslide reads the
-- array there) or outside it (and backslide is the default).
backslide-cases : (i : P s) (a : Ar u X) (su : suc p ≈ u) (def : X) (sp : s + p ≈ r)
                  (j : P r)
                → (∃ λ k → (i ⊕ₚ k) su sp ≡ j × backslide i a su def sp j ≡ a k)
                ⊎ ((∀ k → (i ⊕ₚ k) su sp ≢ j) × backslide i a su def sp j ≡ def)
backslide-cases i a su def sp j with (j ⊖ₚ i) su sp
... | yes (k , e) = inj₁ (k , e , refl)
... | no  ∄k      = inj₂ ((λ k e → ∄k (k , e)) , refl)

------------------------------------------------------------------------
-- backslide is a section of slide

slide-backslide : (i : P s) (a : Ar u X) (su : suc p ≈ u) (def : X) (sp : s + p ≈ r)
                → slide i sp (backslide i a su def sp) su ≗ a
slide-backslide i a su def sp k = backslide-⊕ₚ i a su def sp k

-- The other composite keeps the window and clears the rest.
backslide-slide-inside : (i : P s) (a : Ar r X) (su : suc p ≈ u) (def : X) (sp : s + p ≈ r)
                         (k : P u)
                       → backslide i (slide i sp a su) su def sp ((i ⊕ₚ k) su sp)
                       ≡ a ((i ⊕ₚ k) su sp)
backslide-slide-inside i a su def sp k = backslide-⊕ₚ i (slide i sp a su) su def sp k

------------------------------------------------------------------------
-- Naturality and congruence

slide-map : (i : P s) (sp : s + p ≈ r) (f : X → Y) (a : Ar r X) (su : suc p ≈ u)
          → slide i sp (map f a) su ≗ map f (slide i sp a su)
slide-map i sp f a su j = refl

slide-zipWith : (i : P s) (sp : s + p ≈ r) (f : X → Y → Z) (a : Ar r X) (b : Ar r Y)
                (su : suc p ≈ u)
              → slide i sp (zipWith f a b) su ≗ zipWith f (slide i sp a su) (slide i sp b su)
slide-zipWith i sp f a b su j = refl

slide-cong : (i : P s) (sp : s + p ≈ r) {a b : Ar r X} (su : suc p ≈ u)
           → a ≗ b → slide i sp a su ≗ slide i sp b su
slide-cong i sp su e j = e ((i ⊕ₚ j) su sp)

backslide-map : (i : P s) (f : X → Y) (a : Ar u X) (su : suc p ≈ u) (def : X)
                (sp : s + p ≈ r)
              → backslide i (map f a) su (f def) sp ≗ map f (backslide i a su def sp)
backslide-map i f a su def sp j with (j ⊖ₚ i) su sp
... | yes (k , _) = refl
... | no  _       = refl

backslide-cong : (i : P s) {a b : Ar u X} (su : suc p ≈ u) (def : X) (sp : s + p ≈ r)
               → a ≗ b → backslide i a su def sp ≗ backslide i b su def sp
backslide-cong i su def sp e j with (j ⊖ₚ i) su sp
... | yes (k , _) = e k
... | no  _       = refl

------------------------------------------------------------------------
-- slide and backslide are adjoint for the sum of products
--
--   Σⱼ slide i a j · b j  =  Σₖ a k · backslide i b 0 k
--
-- in a commutative monoid (A, ∙, ε) with a multiplication that
-- distributes over ∙ on the left and is annihilated by ε: the reverse-
-- mode derivative of a slide is the backslide of the incoming gradient.

module _ {A : Set} {_∙_ : A → A → A} {ε : A} {_*_ : A → A → A}
         (isCM : IsCommutativeMonoid _≡_ _∙_ ε)
         (distribˡ : ∀ x y z → x * (y ∙ z) ≡ (x * y) ∙ (x * z))
         (zeroʳ : ∀ x → x * ε ≡ ε) where

  private
    Σ : Ar s A → A
    Σ = sum _∙_ ε

    module _ (i : P s) (b : Ar u A) (su : suc p ≈ u) (sp : s + p ≈ r) where

      -- δ k j: b j if k is the position of j in the window, else ε.
      δ : P r → P u → A
      δ k j with k ≟ₚ (i ⊕ₚ j) su sp
      ... | yes _ = b j
      ... | no  _ = ε

      δ-in : ∀ {k j} → k ≡ (i ⊕ₚ j) su sp → δ k j ≡ b j
      δ-in {k} {j} e with k ≟ₚ (i ⊕ₚ j) su sp
      ... | yes _ = refl
      ... | no ne = ⊥-elim (ne e)

      δ-out : ∀ {k j} → k ≢ (i ⊕ₚ j) su sp → δ k j ≡ ε
      δ-out {k} {j} ne with k ≟ₚ (i ⊕ₚ j) su sp
      ... | yes e = ⊥-elim (ne e)
      ... | no  _ = refl

      -- backslide as a sum over the window
      backslide-δ : ∀ k → backslide i b su ε sp k ≡ Σ (δ k)
      backslide-δ k with (k ⊖ₚ i) su sp
      ... | yes (j′ , e) =
        sym (trans (sum-single isCM j′ λ j j≢j′ →
                      δ-out λ k≡ → j≢j′ (⊕ₚ-injectiveʳ i su sp (trans (sym k≡) (sym e))))
                   (δ-in (sym e)))
      ... | no ∄j = sym (sum-zero isCM λ j → δ-out λ k≡ → ∄j (j , sym k≡))

  slide-backslide-adjoint : (i : P s) (sp : s + p ≈ r) (su : suc p ≈ u)
                            (a : Ar r A) (b : Ar u A)
                          → Σ (λ j → slide i sp a su j * b j)
                          ≡ Σ (λ k → a k * backslide i b su ε sp k)
  slide-backslide-adjoint i sp su a b =
    begin
      Σ (λ j → a (i⊕ j) * b j)
        ≡⟨ sum-cong _∙_ ε (λ j → sym (trans
             (sum-single isCM (i⊕ j) λ k k≢ →
                trans (cong (a k *_) (δ-out i b su sp k≢)) (zeroʳ (a k)))
             (cong (a (i⊕ j) *_) (δ-in i b su sp refl)))) ⟩
      Σ (λ j → Σ (λ k → a k * δ i b su sp k j))
        ≡⟨ sym (sum-swap isCM (λ k j → a k * δ i b su sp k j)) ⟩
      Σ (λ k → Σ (λ j → a k * δ i b su sp k j))
        ≡⟨ sum-cong _∙_ ε (λ k →
             sym (sum-*-distribˡ isCM distribˡ zeroʳ (a k) (δ i b su sp k))) ⟩
      Σ (λ k → a k * Σ (δ i b su sp k))
        ≡⟨ sum-cong _∙_ ε (λ k → cong (a k *_) (sym (backslide-δ i b su sp k))) ⟩
      Σ (λ k → a k * backslide i b su ε sp k)
        ∎
    where
      open ≡-Reasoning
      i⊕ : P _ → P _
      i⊕ j = (i ⊕ₚ j) su sp
