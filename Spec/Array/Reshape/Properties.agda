{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- Laws of reshapes.
--
-- The action of `rev r` inverts the action of r on both sides, so every
-- reshape of arrays is invertible (reshape-rev).  Reshapes also form a
-- category up to pointwise equality of their actions (_≅_): eq is the
-- identity and _∙_ an associative composition; `reshape` is a functor
-- from it, and commutes with map and zipWith.  In a commutative monoid
-- reshaping does not change a sum (sum-reshape).
------------------------------------------------------------------------
module Spec.Array.Reshape.Properties where

open import Data.Nat as ℕ using (ℕ)
open import Data.Fin as F using (Fin)
open import Data.Fin.Properties as Fₚ using (remQuot-combine; combine-remQuot)
open import Data.Product using (proj₁; proj₂)
open import Function using (_∘_)
open import Algebra.Structures using (IsCommutativeMonoid)
open import Relation.Binary.PropositionalEquality

open import Spec.Array.Base
open import Spec.Array.Reshape
open import Spec.Array.Properties using (sum-cong; sum₁-suc; tail)
open import Spec.Proofs.Sum using (sum-swap)

private
  variable
    X Y Z : Set
    s p q r : S

infix 3 _≅_

------------------------------------------------------------------------
-- rev

rev-involutive : (ρ : Reshape s p) → rev (rev ρ) ≡ ρ
rev-involutive eq       = refl
rev-involutive (ρ ∙ σ)  = cong₂ _∙_ (rev-involutive ρ) (rev-involutive σ)
rev-involutive (ρ ⊗ σ)  = cong₂ _⊗_ (rev-involutive ρ) (rev-involutive σ)
rev-involutive split    = refl
rev-involutive flat     = refl
rev-involutive swap     = refl
rev-involutive assocl   = refl
rev-involutive assocr   = refl

-- Going to s and coming back with rev gives back the position.
rev-inverseˡ : (ρ : Reshape s p) (i : P p) → i ⟨ ρ ⟩ ⟨ rev ρ ⟩ ≡ i
rev-inverseˡ eq      i = refl
rev-inverseˡ (ρ ∙ σ) i =
  trans (cong (_⟨ rev ρ ⟩) (rev-inverseˡ σ (i ⟨ ρ ⟩))) (rev-inverseˡ ρ i)
rev-inverseˡ (ρ ⊗ σ) (i ⊗ j) = cong₂ _⊗_ (rev-inverseˡ ρ i) (rev-inverseˡ σ j)
rev-inverseˡ split   (ι i ⊗ ι j) =
  cong (λ x → ι (proj₁ x) ⊗ ι (proj₂ x)) (remQuot-combine i j)
rev-inverseˡ (flat {m} {n}) (ι i) = cong ι (combine-remQuot {m} n i)
rev-inverseˡ swap    (i ⊗ j) = refl
rev-inverseˡ assocl  ((i ⊗ j) ⊗ k) = refl
rev-inverseˡ assocr  (i ⊗ (j ⊗ k)) = refl

-- … and the other way round.
rev-inverseʳ : (ρ : Reshape s p) (i : P s) → i ⟨ rev ρ ⟩ ⟨ ρ ⟩ ≡ i
rev-inverseʳ ρ i =
  subst (λ σ → i ⟨ rev ρ ⟩ ⟨ σ ⟩ ≡ i) (rev-involutive ρ) (rev-inverseˡ (rev ρ) i)

-- Hence the action is injective.
⟨⟩-injective : (ρ : Reshape s p) {i j : P p} → i ⟨ ρ ⟩ ≡ j ⟨ ρ ⟩ → i ≡ j
⟨⟩-injective ρ {i} {j} e =
  trans (sym (rev-inverseˡ ρ i)) (trans (cong (_⟨ rev ρ ⟩) e) (rev-inverseˡ ρ j))

------------------------------------------------------------------------
-- Reshapes with the same action

_≅_ : Reshape s p → Reshape s p → Set
ρ ≅ σ = ∀ i → i ⟨ ρ ⟩ ≡ i ⟨ σ ⟩

∙-identityˡ : (ρ : Reshape s p) → eq ∙ ρ ≅ ρ
∙-identityˡ ρ i = refl

∙-identityʳ : (ρ : Reshape s p) → ρ ∙ eq ≅ ρ
∙-identityʳ ρ i = refl

∙-assoc : (ρ : Reshape r q) (σ : Reshape p r) (τ : Reshape s p)
        → (ρ ∙ σ) ∙ τ ≅ ρ ∙ (σ ∙ τ)
∙-assoc ρ σ τ i = refl

∙-cong : {ρ ρ′ : Reshape p q} {σ σ′ : Reshape s p}
       → ρ ≅ ρ′ → σ ≅ σ′ → ρ ∙ σ ≅ ρ′ ∙ σ′
∙-cong {ρ′ = ρ′} {σ = σ} e f i = trans (cong (_⟨ σ ⟩) (e i)) (f (i ⟨ ρ′ ⟩))

rev-∙-inverseˡ : (ρ : Reshape s p) → rev ρ ∙ ρ ≅ eq
rev-∙-inverseˡ = rev-inverseʳ

rev-∙-inverseʳ : (ρ : Reshape s p) → ρ ∙ rev ρ ≅ eq
rev-∙-inverseʳ = rev-inverseˡ

rev-cong : {ρ σ : Reshape s p} → ρ ≅ σ → rev ρ ≅ rev σ
rev-cong {ρ = ρ} {σ} e i =
  ⟨⟩-injective ρ (trans (rev-inverseʳ ρ i)
                        (sym (trans (e (i ⟨ rev σ ⟩)) (rev-inverseʳ σ i))))

swap-selfinverse : swap {s} {p} ∙ swap ≅ eq
swap-selfinverse (i ⊗ j) = refl

-- split and flat are mutually inverse.
split-flat : ∀ {m n} → split {m} {n} ∙ flat ≅ eq
split-flat = rev-inverseˡ split

flat-split : ∀ {m n} → flat {m} {n} ∙ split ≅ eq
flat-split = rev-inverseˡ flat

------------------------------------------------------------------------
-- reshape on arrays (pointwise equalities)

reshape-eq : (a : Ar s X) → reshape eq a ≗ a
reshape-eq a i = refl

reshape-∙ : (ρ : Reshape p q) (σ : Reshape s p) (a : Ar s X)
          → reshape (ρ ∙ σ) a ≗ reshape ρ (reshape σ a)
reshape-∙ ρ σ a i = refl

reshape-cong : (ρ : Reshape s p) {a b : Ar s X} → a ≗ b → reshape ρ a ≗ reshape ρ b
reshape-cong ρ e i = e (i ⟨ ρ ⟩)

-- Reshapes with the same action reshape alike.
reshape-≅ : {ρ σ : Reshape s p} → ρ ≅ σ → (a : Ar s X) → reshape ρ a ≗ reshape σ a
reshape-≅ e a i = cong a (e i)

-- Reshaping with rev undoes a reshape, on both sides.
reshape-rev : (ρ : Reshape s p) (a : Ar s X) → reshape (rev ρ) (reshape ρ a) ≗ a
reshape-rev ρ a i = cong a (rev-inverseʳ ρ i)

rev-reshape : (ρ : Reshape s p) (a : Ar p X) → reshape ρ (reshape (rev ρ) a) ≗ a
rev-reshape ρ a i = cong a (rev-inverseˡ ρ i)

-- A product reshape acts on each half; with eq on the left it maps over
-- the outer axis.
reshape-⊗ : (ρ : Reshape s p) (σ : Reshape q r) (a : Ar (s ⊗ q) X)
          → reshape (ρ ⊗ σ) a ≗ unnest (λ i → reshape σ (nest (reshape (ρ ⊗ eq) a) i))
reshape-⊗ ρ σ a (i ⊗ j) = refl

reshape-eq⊗ : (σ : Reshape q r) (a : Ar (s ⊗ q) X)
            → reshape (eq ⊗ σ) a ≗ unnest (map (reshape σ) (nest a))
reshape-eq⊗ σ a (i ⊗ j) = refl

reshape-map : (ρ : Reshape s p) (f : X → Y) (a : Ar s X)
            → reshape ρ (map f a) ≗ map f (reshape ρ a)
reshape-map ρ f a i = refl

reshape-zipWith : (ρ : Reshape s p) (f : X → Y → Z) (a : Ar s X) (b : Ar s Y)
                → reshape ρ (zipWith f a b) ≗ zipWith f (reshape ρ a) (reshape ρ b)
reshape-zipWith ρ f a b i = refl

-- Reshaping is injective on arrays, up to pointwise equality.
reshape-injective : (ρ : Reshape s p) {a b : Ar s X}
                  → reshape ρ a ≗ reshape ρ b → a ≗ b
reshape-injective ρ {a} {b} e i =
  trans (sym (reshape-rev ρ a i)) (trans (e (i ⟨ rev ρ ⟩)) (reshape-rev ρ b i))

------------------------------------------------------------------------
-- Reshaping does not change a sum in a commutative monoid

module _ {A : Set} {_•_ : A → A → A} {ε : A}
         (isCM : IsCommutativeMonoid _≡_ _•_ ε) where

  open IsCommutativeMonoid isCM using (assoc; identityˡ)

  private
    Σ : Ar s A → A
    Σ = sum _•_ ε

    injι : ∀ {n} l → P (ι n) → P (ι (n ℕ.+ l))
    injι l (ι j) = ι (F.inject+ l j)

    raiseι : ∀ {l} n → P (ι l) → P (ι (n ℕ.+ l))
    raiseι n (ι k) = ι (F.raise n k)

  -- A vector of n + l elements sums as its first n and its last l.
  sum₁-+ : ∀ n l (a : Ar (ι (n ℕ.+ l)) A) → Σ a ≡ Σ (a ∘ injι l) • Σ (a ∘ raiseι n)
  sum₁-+ ℕ.zero l a =
    sym (trans (identityˡ _) (sum-cong {s = ι l} _•_ ε λ { (ι k) → refl }))
  sum₁-+ (ℕ.suc n) l a =
    begin
      Σ a
        ≡⟨ sum₁-suc _•_ ε a ⟩
      a₀ • Σ (tail a)
        ≡⟨ cong (a₀ •_) (sum₁-+ n l (tail a)) ⟩
      a₀ • (Σ (tail a ∘ injι l) • Σ (tail a ∘ raiseι n))
        ≡⟨ sym (assoc _ _ _) ⟩
      (a₀ • Σ (tail a ∘ injι l)) • Σ (tail a ∘ raiseι n)
        ≡⟨ cong₂ _•_ (cong (a₀ •_) (sum-cong {s = ι n} _•_ ε λ { (ι j) → refl }))
                     (sum-cong {s = ι l} _•_ ε λ { (ι k) → refl }) ⟩
      (a₀ • Σ (tail (a ∘ injι l))) • Σ (a ∘ raiseι (ℕ.suc n))
        ≡⟨ cong (_• Σ (a ∘ raiseι (ℕ.suc n))) (sym (sum₁-suc _•_ ε (a ∘ injι l))) ⟩
      Σ (a ∘ injι l) • Σ (a ∘ raiseι (ℕ.suc n))
        ∎
    where open ≡-Reasoning
          a₀ = a (ι F.zero)

  -- Splitting a vector into rows keeps its sum.
  sum-split : ∀ {m n} (a : Ar (ι (m ℕ.* n)) A) → Σ (reshape (split {m} {n}) a) ≡ Σ a
  sum-split {ℕ.zero}  a = refl
  sum-split {ℕ.suc m} {n} a =
    begin
      Σ (reshape ρ a)
        ≡⟨ sum₁-suc _•_ ε (λ i → Σ (nest (reshape ρ a) i)) ⟩
      Σ (nest (reshape ρ a) (ι F.zero)) • Σ (tail (λ i → Σ (nest (reshape ρ a) i)))
        ≡⟨ cong₂ _•_ (sum-cong {s = ι n} _•_ ε λ { (ι j) → refl })
                     (sum-cong {s = ι m} _•_ ε λ { (ι i) →
                        sum-cong {s = ι n} _•_ ε λ { (ι j) → refl } }) ⟩
      Σ (a ∘ injι (m ℕ.* n)) • Σ (reshape (split {m} {n}) (a ∘ raiseι n))
        ≡⟨ cong (Σ (a ∘ injι (m ℕ.* n)) •_) (sum-split {m} {n} (a ∘ raiseι n)) ⟩
      Σ (a ∘ injι (m ℕ.* n)) • Σ (a ∘ raiseι n)
        ≡⟨ sym (sum₁-+ n (m ℕ.* n) a) ⟩
      Σ a
        ∎
    where open ≡-Reasoning
          ρ = split {ℕ.suc m} {n}

  sum-reshape : (ρ : Reshape s p) (a : Ar s A) → Σ (reshape ρ a) ≡ Σ a
  sum-reshape eq      a = refl
  sum-reshape (ρ ∙ σ) a = trans (sum-reshape ρ (reshape σ a)) (sum-reshape σ a)
  sum-reshape (_⊗_ {s′ = s′} ρ σ) a =
    trans (sum-cong _•_ ε λ i → sum-reshape σ (nest a (i ⟨ ρ ⟩)))
          (sum-reshape ρ (λ i → Σ {s = s′} (nest a i)))
  sum-reshape (split {m} {n}) a = sum-split {m} {n} a
  sum-reshape (flat {m} {n})  a =
    trans (sym (sum-split {m} {n} (reshape flat a)))
          (sum-cong _•_ ε (rev-reshape (split {m} {n}) a))
  sum-reshape swap    a = sym (sum-swap isCM (λ j i → a (j ⊗ i)))
  sum-reshape assocl  a = refl
  sum-reshape assocr  a = refl
