{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- Equality of values, and congruence of the meaning's helpers.
--
-- Array values are functions, and there is no function
-- extensionality, so two values of sort `ar s` are the same when they
-- agree at every position; index values are compared with _≡_.
-- `Same is a b` is that relation; it is an equivalence.
--
-- The second half shows that the semantic helpers used by ⟦_⟧ (Σ,
-- if-eq, at, backslide, the decided index subtractions and argmax)
-- respect it:
-- the proofs of eval-ren, eval-sub and opt-sound reduce every case to
-- one of these lemmas.  None of this needs any law of the scalars.
------------------------------------------------------------------------
open import Spec.Scalar using (Scalar)

module Spec.Proofs.Val (𝕊 : Scalar) where

open import Data.Product using (∃; _,_)
open import Relation.Nullary using (Dec; yes; no)
open import Relation.Binary.PropositionalEquality

open import Spec.Array.Base as A using (S; P; Ar; _⊗_; suc_≈_; _+_≈_)
open import Spec.Array.Index using (_⊖ₚ_; _⊖ᵣₚ_)
import Spec.Array.Slide as Sl
open import Spec.Lang.Syntax using (IS; ix; ar)
open import Spec.Lang.Eval 𝕊 using (Val; Σ; if-eq; at; _≟ₚ_)
import Spec.Array.Argmax as Am
open import Spec.Array.Argmax.Properties using (argmax-cong)
open import Spec.Proofs.Sum using (sum-cong)

open Scalar 𝕊 using (R; 0#; less)

private
  variable
    s p q r u : S

------------------------------------------------------------------------
-- The relation

Same : (is : IS) → Val is → Val is → Set
Same (ar s) a b = ∀ i → a i ≡ b i
Same (ix s) i j = i ≡ j

Same-refl : ∀ is (a : Val is) → Same is a a
Same-refl (ar s) a i = refl
Same-refl (ix s) i   = refl

Same-sym : ∀ is {a b : Val is} → Same is a b → Same is b a
Same-sym (ar s) eq i = sym (eq i)
Same-sym (ix s) eq   = sym eq

Same-trans : ∀ is {a b c : Val is} → Same is a b → Same is b c → Same is a c
Same-trans (ar s) eq eq′ i = trans (eq i) (eq′ i)
Same-trans (ix s) eq eq′   = trans eq eq′

≡⇒Same : ∀ is {a b : Val is} → a ≡ b → Same is a b
≡⇒Same is refl = Same-refl is _

------------------------------------------------------------------------
-- Congruence of the helpers of ⟦_⟧

Σ-cong : {f g : P s → Ar p R} → (∀ i j → f i j ≡ g i j) → ∀ k → Σ f k ≡ Σ g k
Σ-cong eq k = sum-cong λ i → eq i k

if-eq-cong : ∀ {i j : P s} (d : Dec (i ≡ j)) {a b : Ar p R}
           → (∀ k → a k ≡ b k) → ∀ k → if-eq d a k ≡ if-eq d b k
if-eq-cong (yes _) eq k = eq k
if-eq-cong (no  _) eq k = refl

-- the meaning of zero-but
zero-but-cong : ∀ {i i′ j j′ : P s} {a b : Ar p R}
              → i ≡ i′ → j ≡ j′ → (∀ k → a k ≡ b k)
              → ∀ k → if-eq (i ≟ₚ j) a k ≡ if-eq (i′ ≟ₚ j′) b k
zero-but-cong {i = i} {j = j} refl refl eq = if-eq-cong (i ≟ₚ j) eq

at-cong : ∀ {X : P s → Set} (d : Dec (∃ X)) {f g : P s → Ar p R}
        → (∀ k l → f k l ≡ g k l) → ∀ l → at d f l ≡ at d g l
at-cong (yes (k , _)) eq l = eq k l
at-cong (no  _)       eq l = refl

-- the meaning of ix-minus
ix-minus-cong : ∀ {i i′ : P r} {j j′ : P s} (sp : s + p ≈ r) (su : suc p ≈ u)
                {f g : P u → Ar q R}
              → i ≡ i′ → j ≡ j′ → (∀ k l → f k l ≡ g k l)
              → ∀ l → at ((i ⊖ₚ j) su sp) f l ≡ at ((i′ ⊖ₚ j′) su sp) g l
ix-minus-cong {i = i} {j = j} sp su refl refl eq = at-cong ((i ⊖ₚ j) su sp) eq

-- the meaning of ix-minusᵣ
ix-minusᵣ-cong : ∀ {i i′ : P r} {j j′ : P u} (sp : s + p ≈ r) (su : suc p ≈ u)
                 {f g : P s → Ar q R}
               → i ≡ i′ → j ≡ j′ → (∀ k l → f k l ≡ g k l)
               → ∀ l → at ((i ⊖ᵣₚ j) su sp) f l ≡ at ((i′ ⊖ᵣₚ j′) su sp) g l
ix-minusᵣ-cong {i = i} {j = j} sp su refl refl eq = at-cong ((i ⊖ᵣₚ j) su sp) eq

backslide-cong : ∀ {i i′ : P s} (su : suc p ≈ u) (sp : s + p ≈ r) {a b : Ar u R}
               → i ≡ i′ → (∀ k → a k ≡ b k)
               → ∀ l → Sl.backslide i a su 0# sp l ≡ Sl.backslide i′ b su 0# sp l
backslide-cong {i = i} su sp refl eq l with (l ⊖ₚ i) su sp
... | yes (k , _) = eq k
... | no  _       = refl

-- the meaning of argmax: bodies that agree at every position have
-- the same argmax
argmax-sem-cong : (w : suc p ≈ s) {f g : P s → R} → (∀ i → f i ≡ g i)
                → Am.argmax less w f ≡ Am.argmax less w g
argmax-sem-cong w h = argmax-cong less less w λ i j → cong₂ less (h i) (h j)
