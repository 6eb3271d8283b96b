{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- Laws of index arithmetic (Spec.Array.Index).
--
--  * positions have decidable equality (_≟ₚ_);
--  * ⊕ is injective in each argument, on Fin and leafwise on positions;
--  * the subtractions are complete: left-subtracting j from j ⊕ k
--    answers yes with k (⊖-⊕, ⊖ₚ-⊕ₚ), and right-subtracting k from
--    j ⊕ k answers yes with j (⊖ᵣ-⊕, ⊖ᵣₚ-⊕ₚ).  Soundness (a yes k gives
--    back i under ⊕) is the evidence the Dec carries;
--  * div, mod and combine are mutually inverse, and combine is the
--    row-major formula i · n + j (toℕ-combine).
------------------------------------------------------------------------
module Spec.Array.Index.Properties where

open import Data.Empty using (⊥-elim)
open import Data.Nat as ℕ using (ℕ; zero; suc)
open import Data.Nat.Properties as ℕₚ using (+-cancelˡ-≡; +-cancelʳ-≡; +-assoc)
open import Data.Fin as F using (Fin; toℕ)
open import Data.Fin.Properties as Fₚ
  using (toℕ-injective; toℕ-raise; toℕ-inject+; remQuot-combine; combine-remQuot)
open import Data.Product using (∃; _,_; proj₁; proj₂; _×_)
open import Relation.Nullary using (Dec; yes; no)
open import Relation.Binary.PropositionalEquality

open import Spec.Array.Base
open import Spec.Array.Index

private
  variable
    m n : ℕ
    s p q r u : S

------------------------------------------------------------------------
-- Positions have decidable equality

infix 4 _≟ₚ_

_≟ₚ_ : (i j : P s) → Dec (i ≡ j)
ι i ≟ₚ ι j with i Fₚ.≟ j
... | yes refl = yes refl
... | no  i≢j  = no λ e → i≢j (ι-injective e)
(i ⊗ i′) ≟ₚ (j ⊗ j′) with i ≟ₚ j | i′ ≟ₚ j′
... | yes refl | yes refl = yes refl
... | no  i≢j  | _        = no λ e → i≢j (proj₁ (⊗-injective e))
... | yes _    | no i′≢j′ = no λ e → i′≢j′ (proj₂ (⊗-injective e))

------------------------------------------------------------------------
-- ⊕ on Fin

⊕-injectiveʳ : (i : Fin m) {j j′ : Fin (suc n)} → i ⊕ j ≡ i ⊕ j′ → j ≡ j′
⊕-injectiveʳ i {j} {j′} e = toℕ-injective (+-cancelˡ-≡ (toℕ i)
  (trans (sym (toℕ-⊕ i j)) (trans (cong toℕ e) (toℕ-⊕ i j′))))

⊕-injectiveˡ : {i i′ : Fin m} (j : Fin (suc n)) → i ⊕ j ≡ i′ ⊕ j → i ≡ i′
⊕-injectiveˡ {i = i} {i′} j e = toℕ-injective (+-cancelʳ-≡ (toℕ i) (toℕ i′)
  (trans (sym (toℕ-⊕ i j)) (trans (cong toℕ e) (toℕ-⊕ i′ j))))

-- Subtraction finds what was added.
⊖-⊕ : (j : Fin m) (k : Fin (suc n)) → ∃ λ e → (j ⊕ k) ⊖ j ≡ yes (k , e)
⊖-⊕ j k with (j ⊕ k) ⊖ j
... | no ∄k = ⊥-elim (∄k (k , refl))
... | yes (k′ , e) with ⊕-injectiveʳ j {k′} {k} e
...   | refl = e , refl

⊖ᵣ-⊕ : (j : Fin m) (k : Fin (suc n)) → ∃ λ e → _⊖ᵣ_ {m} (j ⊕ k) k ≡ yes (j , e)
⊖ᵣ-⊕ {m} j k with _⊖ᵣ_ {m} (j ⊕ k) k
... | no ∄j = ⊥-elim (∄j (j , refl))
... | yes (j′ , e) with ⊕-injectiveˡ {i = j′} {j} k e
...   | refl = e , refl

------------------------------------------------------------------------
-- ⊕ₚ on positions

⊕ₚ-injectiveʳ : (i : P s) (su : suc p ≈ u) (sp : s + p ≈ r) {j j′ : P u}
              → (i ⊕ₚ j) su sp ≡ (i ⊕ₚ j′) su sp → j ≡ j′
⊕ₚ-injectiveʳ (ι i) ι ι {ι j} {ι j′} e = cong ι (⊕-injectiveʳ i {j} {j′} (ι-injective e))
⊕ₚ-injectiveʳ (i ⊗ i′) (su ⊗ su′) (sp ⊗ sp′) {j ⊗ k} {j′ ⊗ k′} e =
  cong₂ _⊗_ (⊕ₚ-injectiveʳ i su sp (proj₁ (⊗-injective e)))
            (⊕ₚ-injectiveʳ i′ su′ sp′ (proj₂ (⊗-injective e)))

⊕ₚ-injectiveˡ : {i i′ : P s} (j : P u) (su : suc p ≈ u) (sp : s + p ≈ r)
              → (i ⊕ₚ j) su sp ≡ (i′ ⊕ₚ j) su sp → i ≡ i′
⊕ₚ-injectiveˡ {i = ι i} {ι i′} (ι j) ι ι e = cong ι (⊕-injectiveˡ {i = i} {i′} j (ι-injective e))
⊕ₚ-injectiveˡ {i = i ⊗ k} {i′ ⊗ k′} (j ⊗ j′) (su ⊗ su′) (sp ⊗ sp′) e =
  cong₂ _⊗_ (⊕ₚ-injectiveˡ j su sp (proj₁ (⊗-injective e)))
            (⊕ₚ-injectiveˡ j′ su′ sp′ (proj₂ (⊗-injective e)))

-- Completeness of the subtractions: ⊖ₚ of ⊕ₚ is yes, with the summand.
⊖ₚ-⊕ₚ : (j : P s) (k : P u) (su : suc p ≈ u) (sp : s + p ≈ r)
      → ∃ λ e → ((j ⊕ₚ k) su sp ⊖ₚ j) su sp ≡ yes (k , e)
⊖ₚ-⊕ₚ j k su sp with ((j ⊕ₚ k) su sp ⊖ₚ j) su sp
... | no ∄k = ⊥-elim (∄k (k , refl))
... | yes (k′ , e) with ⊕ₚ-injectiveʳ j su sp {k′} {k} e
...   | refl = e , refl

⊖ᵣₚ-⊕ₚ : (j : P s) (k : P u) (su : suc p ≈ u) (sp : s + p ≈ r)
       → ∃ λ e → ((j ⊕ₚ k) su sp ⊖ᵣₚ k) su sp ≡ yes (j , e)
⊖ᵣₚ-⊕ₚ j k su sp with ((j ⊕ₚ k) su sp ⊖ᵣₚ k) su sp
... | no ∄j = ⊥-elim (∄j (j , refl))
... | yes (j′ , e) with ⊕ₚ-injectiveˡ {i = j′} {j} k su sp e
...   | refl = e , refl

-- Soundness, spelled out: a yes k from ⊖ₚ gives i back under ⊕ₚ.
⊖ₚ-yes : (i : P r) (j : P s) (su : suc p ≈ u) (sp : s + p ≈ r)
         {k : P u} {e : (j ⊕ₚ k) su sp ≡ i}
       → (i ⊖ₚ j) su sp ≡ yes (k , e) → (j ⊕ₚ k) su sp ≡ i
⊖ₚ-yes i j su sp {e = e} _ = e

-- … and a no means that i is not j ⊕ₚ anything: i lies outside the
-- window at offset j.
⊖ₚ-no : (i : P r) (j : P s) (su : suc p ≈ u) (sp : s + p ≈ r)
      → (∀ {x} → (i ⊖ₚ j) su sp ≢ yes x) → ∀ k → (j ⊕ₚ k) su sp ≢ i
⊖ₚ-no i j su sp ¬yes k refl = ¬yes (proj₂ (⊖ₚ-⊕ₚ j k su sp))

------------------------------------------------------------------------
-- div, mod and combine

toℕ-combine : ∀ {m n} (i : Fin m) (j : Fin n) → toℕ (F.combine i j) ≡ toℕ i ℕ.* n ℕ.+ toℕ j
toℕ-combine {suc m} {n} F.zero    j = sym (toℕ-inject+ (m ℕ.* n) j)
toℕ-combine {suc m} {n} (F.suc i) j =
  trans (toℕ-raise n (F.combine i j))
        (trans (cong (n ℕ.+_) (toℕ-combine i j)) (sym (+-assoc n (toℕ i ℕ.* n) (toℕ j))))

-- A vector position is its block's index times the block size, plus
-- its position inside the block.
toℕ-remQuot : ∀ {m} n (i : Fin (m ℕ.* n))
            → toℕ i ≡ toℕ (proj₁ (F.remQuot {m} n i)) ℕ.* n ℕ.+ toℕ (proj₂ (F.remQuot {m} n i))
toℕ-remQuot {m} n i =
  trans (sym (cong toℕ (combine-remQuot {m} n i)))
        (toℕ-combine (proj₁ (F.remQuot {m} n i)) (proj₂ (F.remQuot {m} n i)))

div-combine : (b : s * p ≈ q) (i : P s) (j : P p) → div b (combine b i j) ≡ i
div-combine ι (ι i) (ι j) = cong (λ x → ι (proj₁ x)) (remQuot-combine i j)
div-combine (b ⊗ b′) (i ⊗ i′) (j ⊗ j′) = cong₂ _⊗_ (div-combine b i j) (div-combine b′ i′ j′)

mod-combine : (b : s * p ≈ q) (i : P s) (j : P p) → mod b (combine b i j) ≡ j
mod-combine ι (ι i) (ι j) = cong (λ x → ι (proj₂ x)) (remQuot-combine i j)
mod-combine (b ⊗ b′) (i ⊗ i′) (j ⊗ j′) = cong₂ _⊗_ (mod-combine b i j) (mod-combine b′ i′ j′)

combine-div-mod : (b : s * p ≈ q) (k : P q) → combine b (div b k) (mod b k) ≡ k
combine-div-mod (ι {m} {n}) (ι k) = cong ι (combine-remQuot {m} n k)
combine-div-mod (b ⊗ b′) (k ⊗ k′) = cong₂ _⊗_ (combine-div-mod b k) (combine-div-mod b′ k′)

combine-injective : (b : s * p ≈ q) {i i′ : P s} {j j′ : P p}
                  → combine b i j ≡ combine b i′ j′ → i ≡ i′ × j ≡ j′
combine-injective b {i} {i′} {j} {j′} e =
    trans (sym (div-combine b i j)) (trans (cong (div b) e) (div-combine b i′ j′))
  , trans (sym (mod-combine b i j)) (trans (cong (mod b) e) (mod-combine b i′ j′))
