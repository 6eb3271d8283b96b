{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- Index arithmetic: bounded addition of positions and its two partial
-- inverses, decided (Dec), and the index action of blocking (div, mod
-- and their inverse `combine`).
--
--   i ⊕ j      : Fin (m + n)   for i : Fin m, j : Fin (1 + n)
--   i ⊖ j      : Dec (∃ k. j ⊕ k ≡ i)       (left subtraction)
--   i ⊖ᵣ j     : Dec (∃ k. k ⊕ j ≡ i)       (right subtraction)
-- and the same, leafwise, on positions of any shape (⊕ₚ, ⊖ₚ, ⊖ᵣₚ).
------------------------------------------------------------------------
module Spec.Array.Index where

open import Data.Nat as ℕ using (ℕ; zero; suc; _<_; s≤s)
open import Data.Nat.Properties as ℕₚ using (m≤n+m)
open import Data.Fin as F using (Fin; toℕ; fromℕ<; inject≤)
open import Data.Fin.Properties as Fₚ
  using (toℕ-injective; toℕ-inject≤; toℕ-fromℕ<; toℕ<n; suc-injective)
open import Data.Product using (∃; _,_; proj₁; proj₂; _×_)
open import Relation.Nullary using (Dec; yes; no; ¬_)
open import Relation.Binary.PropositionalEquality

open import Spec.Array.Base

private
  variable
    s p q r u : S

------------------------------------------------------------------------
-- On Fin

infixl 6 _⊕_

_⊕_ : ∀ {m n} → Fin m → Fin (suc n) → Fin (m ℕ.+ n)
_⊕_ {suc m} {n} F.zero j = inject≤ j (s≤s (m≤n+m n m))
F.suc i ⊕ j = F.suc (i ⊕ j)

toℕ-⊕ : ∀ {m n} (i : Fin m) (j : Fin (suc n)) → toℕ (i ⊕ j) ≡ toℕ i ℕ.+ toℕ j
toℕ-⊕ {suc m} {n} F.zero j = toℕ-inject≤ j _
toℕ-⊕ (F.suc i) j = cong suc (toℕ-⊕ i j)

-- Left subtraction: the k with j ⊕ k ≡ i, or a proof that there is none.
_⊖_ : ∀ {m n} (i : Fin (m ℕ.+ n)) (j : Fin m) → Dec (∃ λ k → j ⊕ k ≡ i)
_⊖_ {suc m} {n} i F.zero with toℕ i ℕ.<? suc n
... | yes i<1+n = yes (fromℕ< i<1+n
                      , toℕ-injective (trans (toℕ-inject≤ _ _) (toℕ-fromℕ< i<1+n)))
... | no  i≮1+n = no λ { (k , eq) →
        i≮1+n (subst (_< suc n) (trans (sym (toℕ-inject≤ k _)) (cong toℕ eq)) (toℕ<n k)) }
_⊖_ {suc m} F.zero    (F.suc j) = no λ { (k , ()) }
_⊖_ {suc m} (F.suc i) (F.suc j) with i ⊖ j
... | yes (k , eq) = yes (k , cong F.suc eq)
... | no  ∄k       = no λ { (k , eq) → ∄k (k , suc-injective eq) }

-- Right subtraction: the k with k ⊕ j ≡ i, or a proof that there is none.
_⊖ᵣ_ : ∀ {m n} (i : Fin (m ℕ.+ n)) (j : Fin (suc n)) → Dec (∃ λ k → k ⊕ j ≡ i)
_⊖ᵣ_ {zero}  i j = no λ { (() , _) }
_⊖ᵣ_ {suc m} {n} i j with toℕ j ℕ.≟ toℕ i
... | yes j≡i = yes (F.zero , toℕ-injective (trans (toℕ-inject≤ j _) j≡i))
_⊖ᵣ_ {suc m} F.zero j | no j≢i =
  no λ { (F.zero , eq) → j≢i (trans (sym (toℕ-inject≤ j _)) (cong toℕ eq)) ; (F.suc k , ()) }
_⊖ᵣ_ {suc m} (F.suc i) j | no j≢i with i ⊖ᵣ j
... | yes (k , eq) = yes (F.suc k , cong F.suc eq)
... | no  ∄k       = no λ { (F.zero , eq) → j≢i (trans (sym (toℕ-inject≤ j _)) (cong toℕ eq))
                          ; (F.suc k , eq) → ∄k (k , suc-injective eq) }

------------------------------------------------------------------------
-- Positions: injectivity of the constructors

ι-injective : ∀ {n} {i j : Fin n} → _≡_ {A = P (ι n)} (ι i) (ι j) → i ≡ j
ι-injective refl = refl

⊗-injective : ∀ {a c : P s} {b d : P p} → _≡_ {A = P (s ⊗ p)} (a ⊗ b) (c ⊗ d) → a ≡ c × b ≡ d
⊗-injective refl = refl , refl

------------------------------------------------------------------------
-- On positions of any shape, leafwise

_⊕ₚ_ : P s → P u → suc p ≈ u → s + p ≈ r → P r
(ι i ⊕ₚ ι j) ι ι = ι (i ⊕ j)
((i ⊗ i′) ⊕ₚ (j ⊗ j′)) (su ⊗ su′) (sp ⊗ sp′) = (i ⊕ₚ j) su sp ⊗ (i′ ⊕ₚ j′) su′ sp′

_⊖ₚ_ : (i : P r) (j : P s) (su : suc p ≈ u) (sp : s + p ≈ r)
     → Dec (∃ λ k → (j ⊕ₚ k) su sp ≡ i)
(ι i ⊖ₚ ι j) ι ι with i ⊖ j
... | yes (k , eq) = yes (ι k , cong ι eq)
... | no  ∄k       = no λ { (ι k , eq) → ∄k (k , ι-injective eq) }
((i ⊗ i′) ⊖ₚ (j ⊗ j′)) (su ⊗ su′) (sp ⊗ sp′)
  with (i ⊖ₚ j) su sp | (i′ ⊖ₚ j′) su′ sp′
... | yes (k , eq) | yes (k′ , eq′) = yes (k ⊗ k′ , cong₂ _⊗_ eq eq′)
... | no  ∄k       | _              = no λ { (k ⊗ k′ , eq) → ∄k (k , proj₁ (⊗-injective eq)) }
... | yes _        | no  ∄k′        = no λ { (k ⊗ k′ , eq) → ∄k′ (k′ , proj₂ (⊗-injective eq)) }

_⊖ᵣₚ_ : (i : P r) (j : P u) (su : suc p ≈ u) (sp : s + p ≈ r)
      → Dec (∃ λ k → (k ⊕ₚ j) su sp ≡ i)
(ι i ⊖ᵣₚ ι j) ι ι with i ⊖ᵣ j
... | yes (k , eq) = yes (ι k , cong ι eq)
... | no  ∄k       = no λ { (ι k , eq) → ∄k (k , ι-injective eq) }
((i ⊗ i′) ⊖ᵣₚ (j ⊗ j′)) (su ⊗ su′) (sp ⊗ sp′)
  with (i ⊖ᵣₚ j) su sp | (i′ ⊖ᵣₚ j′) su′ sp′
... | yes (k , eq) | yes (k′ , eq′) = yes (k ⊗ k′ , cong₂ _⊗_ eq eq′)
... | no  ∄k       | _              = no λ { (k ⊗ k′ , eq) → ∄k (k , proj₁ (⊗-injective eq)) }
... | yes _        | no  ∄k′        = no λ { (k ⊗ k′ , eq) → ∄k′ (k′ , proj₂ (⊗-injective eq)) }

------------------------------------------------------------------------
-- Blocking on indices: a position of q (s * p ≈ q) is a block position
-- (div) and a position inside the block (mod); `combine` puts them back:
-- leafwise, combine i j = i · p + j.

div : s * p ≈ q → P q → P s
div {s = ι m} {p = ι n} ι (ι i) = ι (proj₁ (F.remQuot {m} n i))
div (m ⊗ m′) (i ⊗ i′) = div m i ⊗ div m′ i′

mod : s * p ≈ q → P q → P p
mod {s = ι m} {p = ι n} ι (ι i) = ι (proj₂ (F.remQuot {m} n i))
mod (m ⊗ m′) (i ⊗ i′) = mod m i ⊗ mod m′ i′

combine : s * p ≈ q → P s → P p → P q
combine ι (ι i) (ι j) = ι (F.combine i j)
combine (m ⊗ m′) (i ⊗ i′) (j ⊗ j′) = combine m i j ⊗ combine m′ i′ j′
