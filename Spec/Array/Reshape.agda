{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- Reshapes: element-preserving changes of shape (paper §3).
--
-- `Reshape s p` is an inductive relation between shapes with the same
-- number of elements.  Each reshape acts on positions contravariantly
-- (i ⟨ r ⟩ turns a position of p into a position of s), which gives
-- `reshape` on arrays.  Every reshape can be reversed (`rev`); the laws
-- that rev's action inverts the original, and the other reshape laws,
-- are in Spec.Array.Reshape.Properties.
--
-- Two shapes may be related in more than one way: swap and split ∙ flat
-- both relate ι m ⊗ ι n to itself, but only the first transposes.
------------------------------------------------------------------------
module Spec.Array.Reshape where

open import Data.Nat as ℕ using (ℕ)
open import Data.Fin as F using (Fin)
open import Data.Fin.Patterns using (1F; 2F; 4F)
open import Data.Product using (proj₁; proj₂)
open import Relation.Binary.PropositionalEquality using (_≡_; refl)

open import Spec.Array.Base

private
  variable
    X : Set
    m n : ℕ
    s p q r s′ p′ : S

infixr 4 _∙_
infixr 5 _⊗_   -- as for shapes and positions
infixl 11 _⟨_⟩

------------------------------------------------------------------------
-- The relation

data Reshape : S → S → Set where
  eq     : Reshape s s
  -- composition, read right to left like function composition
  _∙_    : Reshape p q → Reshape s p → Reshape s q
  -- reshape both halves of a product independently
  _⊗_    : Reshape s p → Reshape s′ p′ → Reshape (s ⊗ s′) (p ⊗ p′)
  -- a vector of m · n elements as m rows of n, and back
  split  : Reshape (ι (m ℕ.* n)) (ι m ⊗ ι n)
  flat   : Reshape (ι m ⊗ ι n) (ι (m ℕ.* n))
  swap   : Reshape (s ⊗ p) (p ⊗ s)
  assocl : Reshape (s ⊗ (p ⊗ q)) ((s ⊗ p) ⊗ q)
  assocr : Reshape ((s ⊗ p) ⊗ q) (s ⊗ (p ⊗ q))

------------------------------------------------------------------------
-- Action on positions and arrays

-- Row-major: split reads position (i, j) of the m × n matrix at
-- i · n + j of the vector (Data.Fin.combine); flat inverts it with
-- Data.Fin.remQuot.
_⟨_⟩ : P p → Reshape s p → P s
i ⟨ eq ⟩                        = i
i ⟨ r ∙ r′ ⟩                    = i ⟨ r ⟩ ⟨ r′ ⟩
(i ⊗ j) ⟨ r ⊗ r′ ⟩              = i ⟨ r ⟩ ⊗ j ⟨ r′ ⟩
(ι i ⊗ ι j) ⟨ split ⟩           = ι (F.combine i j)
ι i ⟨ flat {m} {n} ⟩            = ι (proj₁ (F.remQuot {m} n i))
                                ⊗ ι (proj₂ (F.remQuot {m} n i))
(i ⊗ j) ⟨ swap ⟩                = j ⊗ i
((i ⊗ j) ⊗ k) ⟨ assocl ⟩        = i ⊗ (j ⊗ k)
(i ⊗ (j ⊗ k)) ⟨ assocr ⟩        = (i ⊗ j) ⊗ k

reshape : Reshape s p → Ar s X → Ar p X
reshape r a ix = a (ix ⟨ r ⟩)

-- The reverse reshape.
rev : Reshape s p → Reshape p s
rev eq       = eq
rev (r ∙ r′) = rev r′ ∙ rev r
rev (r ⊗ r′) = rev r ⊗ rev r′
rev split    = flat
rev flat     = split
rev swap     = swap
rev assocl   = assocr
rev assocr   = assocl

------------------------------------------------------------------------
-- Examples

private
  v6 : Ar (ι (2 ℕ.* 3)) ℕ
  v6 (ι i) = F.toℕ i

  -- split is row-major: row 1, column 2 is element 1 · 3 + 2.
  _ : reshape (split {m = 2} {n = 3}) v6 (ι 1F ⊗ ι 2F) ≡ 5
  _ = refl

  -- swap transposes, split ∙ flat does not.
  m23 : Ar (ι 2 ⊗ ι 3) ℕ
  m23 (ι i ⊗ ι j) = 10 ℕ.* F.toℕ i ℕ.+ F.toℕ j

  _ : reshape swap m23 (ι 2F ⊗ ι 1F) ≡ 12
  _ = refl

  _ : reshape (split {m = 2} {n = 3} ∙ flat) m23 (ι 1F ⊗ ι 2F) ≡ 12
  _ = refl

  -- rev undoes a composite reshape.
  sws : Reshape (ι (2 ℕ.* 3)) (ι 3 ⊗ ι 2)
  sws = swap ∙ split

  _ : reshape (rev sws) (reshape sws v6) (ι 4F) ≡ 4
  _ = refl
