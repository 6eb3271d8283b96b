{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- Shapes, positions and arrays: the carriers of the whole specification.
--
-- A shape is a binary tree of natural numbers; a position of a shape has
-- the same tree with each leaf n replaced by an element of Fin n; an
-- array is a function from positions to values.  The leafwise relations
-- s + p ≈ r, suc p ≈ u and s * p ≈ q witness that two shapes have the
-- same tree structure and say how a third is computed from them.
------------------------------------------------------------------------
module Spec.Array.Base where

open import Data.Nat as ℕ using (ℕ; zero; suc)
open import Data.Fin as F using (Fin)
open import Data.Product using (_×_; _,_)
open import Function using (_∘_)

infixr 5 _⊗_

------------------------------------------------------------------------
-- Shapes, positions, arrays

data S : Set where
  ι   : ℕ → S
  _⊗_ : S → S → S

data P : S → Set where
  ι   : ∀ {n} → Fin n → P (ι n)
  _⊗_ : ∀ {s p} → P s → P p → P (s ⊗ p)

Ar : S → Set → Set
Ar s X = P s → X

-- The shape of scalars: a one-element vector.
unit : S
unit = ι 1

-- Number of elements of a shape.
∣_∣ : S → ℕ
∣ ι n   ∣ = n
∣ s ⊗ p ∣ = ∣ s ∣ ℕ.* ∣ p ∣

private
  variable
    X Y Z : Set
    s p q r u : S

------------------------------------------------------------------------
-- Combinators: Ar s is an applicative functor; nest/unnest curry shapes.

K : X → Ar s X
K x _ = x

map : (X → Y) → Ar s X → Ar s Y
map f a i = f (a i)

zipWith : (X → Y → Z) → Ar s X → Ar s Y → Ar s Z
zipWith f a b i = f (a i) (b i)

nest : Ar (s ⊗ p) X → Ar s (Ar p X)
nest a i j = a (i ⊗ j)

unnest : Ar s (Ar p X) → Ar (s ⊗ p) X
unnest a (i ⊗ j) = a i j

------------------------------------------------------------------------
-- Reduction: a right fold over a vector, iterated over product shapes.

sum₁ : ∀ {n} → (X → X → X) → X → Ar (ι n) X → X
sum₁ {n = zero}  _⊕_ ε a = ε
sum₁ {n = suc n} _⊕_ ε a = a (ι F.zero) ⊕ sum₁ _⊕_ ε (λ { (ι i) → a (ι (F.suc i)) })

sum : (X → X → X) → X → Ar s X → X
sum {s = ι n}   _⊕_ ε a = sum₁ _⊕_ ε a
sum {s = s ⊗ p} _⊕_ ε a = sum _⊕_ ε (λ i → sum _⊕_ ε (nest a i))

------------------------------------------------------------------------
-- Leafwise relations between shapes.

infix 4 _+_≈_ suc_≈_ _*_≈_

-- s + p ≈ r : same tree, r = s + p at every leaf.
data _+_≈_ : S → S → S → Set where
  ι   : ∀ {m n} → ι m + ι n ≈ ι (m ℕ.+ n)
  _⊗_ : ∀ {s p r s′ p′ r′} → s + p ≈ r → s′ + p′ ≈ r′
      → s ⊗ s′ + p ⊗ p′ ≈ r ⊗ r′

-- suc p ≈ u : same tree, u = 1 + p at every leaf.
data suc_≈_ : S → S → Set where
  ι   : ∀ {n} → suc ι n ≈ ι (suc n)
  _⊗_ : ∀ {p u p′ u′} → suc p ≈ u → suc p′ ≈ u′ → suc (p ⊗ p′) ≈ u ⊗ u′

-- s * p ≈ q : same tree, q = s · p at every leaf.
data _*_≈_ : S → S → S → Set where
  ι   : ∀ {m n} → ι m * ι n ≈ ι (m ℕ.* n)
  _⊗_ : ∀ {s p q s′ p′ q′} → s * p ≈ q → s′ * p′ ≈ q′
      → s ⊗ s′ * p ⊗ p′ ≈ q ⊗ q′
