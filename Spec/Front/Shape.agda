{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- Deciding the shape relations the constructors of E need.
--
-- The elaborator (Spec.Front.Check) knows the shapes of the arguments
-- of a node and must find the remaining shapes and the witnesses of
-- s + p ≈ r, suc p ≈ u and s * p ≈ q, or report that there are none.
-- Every function here either returns a witness or `nothing`; a
-- `nothing` becomes a shape error naming the operation.  Also: shapes
-- in the user's words (`6×24×24`), and equality of shapes.
------------------------------------------------------------------------
module Spec.Front.Shape where

open import Data.List using (List; []; _∷_)
open import Data.Maybe using (Maybe; just; nothing)
open import Data.Nat as ℕ using (ℕ; zero; suc; _∸_; _≤?_)
open import Data.Nat.Divisibility using (_∣?_; divides)
open import Data.Nat.Properties as ℕₚ using (m+[n∸m]≡n; *-comm)
open import Data.Nat.Show using () renaming (show to showℕ)
open import Data.Product using (Σ; _,_)
open import Data.String using (String; _++_)
open import Relation.Binary.PropositionalEquality using (_≡_; refl; subst; sym; cong₂)
open import Relation.Nullary using (Dec; yes; no)

open import Spec.Array.Base using (S; ι; _⊗_; unit; _+_≈_; suc_≈_; _*_≈_)

------------------------------------------------------------------------
-- Equality

open import Spec.Array.Properties public using (_≟ₛ_)

------------------------------------------------------------------------
-- s + p ≈ r

-- r from s and p (same tree).
plus? : (s p : S) → Maybe (Σ S (s + p ≈_))
plus? (ι m) (ι n) = just (_ , ι)
plus? (s ⊗ s′) (p ⊗ p′) with plus? s p | plus? s′ p′
... | just (_ , a) | just (_ , b) = just (_ , a ⊗ b)
... | _            | _            = nothing
plus? _ _ = nothing

-- p from s and r (same tree, s ≤ r at every leaf).
minus? : (s r : S) → Maybe (Σ S λ p → s + p ≈ r)
minus? (ι m) (ι n) with m ≤? n
... | yes m≤n = just (ι (n ∸ m) , subst (λ k → ι m + ι (n ∸ m) ≈ ι k) (m+[n∸m]≡n m≤n) ι)
... | no _    = nothing
minus? (s ⊗ s′) (r ⊗ r′) with minus? s r | minus? s′ r′
... | just (_ , a) | just (_ , b) = just (_ , a ⊗ b)
... | _            | _            = nothing
minus? _ _ = nothing

-- s from p and r (same tree, p ≤ r at every leaf).
minusʳ? : (p r : S) → Maybe (Σ S λ s → s + p ≈ r)
minusʳ? (ι m) (ι n) with m ≤? n
... | yes m≤n = just (ι (n ∸ m) , subst (λ k → ι (n ∸ m) + ι m ≈ ι k) (lemma m≤n) ι)
  where lemma : ∀ {m n} → m ℕ.≤ n → n ∸ m ℕ.+ m ≡ n
        lemma {m} {n} m≤n = subst (_≡ n) (ℕₚ.+-comm m (n ∸ m)) (m+[n∸m]≡n m≤n)
... | no _    = nothing
minusʳ? (p ⊗ p′) (r ⊗ r′) with minusʳ? p r | minusʳ? p′ r′
... | just (_ , a) | just (_ , b) = just (_ , a ⊗ b)
... | _            | _            = nothing
minusʳ? _ _ = nothing

------------------------------------------------------------------------
-- suc p ≈ u

-- u from p: always.
suc! : (p : S) → Σ S (suc p ≈_)
suc! (ι n)   = _ , ι
suc! (p ⊗ q) with suc! p | suc! q
... | _ , a | _ , b = _ , a ⊗ b

-- p from u (every leaf of u at least 1).
pred? : (u : S) → Maybe (Σ S λ p → suc p ≈ u)
pred? (ι zero)    = nothing
pred? (ι (suc n)) = just (ι n , ι)
pred? (u ⊗ v) with pred? u | pred? v
... | just (_ , a) | just (_ , b) = just (_ , a ⊗ b)
... | _            | _            = nothing

------------------------------------------------------------------------
-- s * p ≈ q

-- q from s and p (same tree).
times? : (s p : S) → Maybe (Σ S (s * p ≈_))
times? (ι m) (ι n) = just (_ , ι)
times? (s ⊗ s′) (p ⊗ p′) with times? s p | times? s′ p′
... | just (_ , a) | just (_ , b) = just (_ , a ⊗ b)
... | _            | _            = nothing
times? _ _ = nothing

-- p from s and q (same tree, s divides q at every leaf).
quot? : (s q : S) → Maybe (Σ S λ p → s * p ≈ q)
quot? (ι m) (ι n) with m ∣? n
... | yes (divides k eq) =
  just (ι k , subst (λ j → ι m * ι k ≈ ι j) (sym (subst (n ≡_) (*-comm k m) eq)) ι)
... | no _ = nothing
quot? (s ⊗ s′) (q ⊗ q′) with quot? s q | quot? s′ q′
... | just (_ , a) | just (_ , b) = just (_ , a ⊗ b)
... | _            | _            = nothing
quot? _ _ = nothing

-- s from p and q (same tree, p divides q at every leaf).
quotˡ? : (p q : S) → Maybe (Σ S λ s → s * p ≈ q)
quotˡ? (ι m) (ι n) with m ∣? n
... | yes (divides k eq) = just (ι k , subst (λ j → ι k * ι m ≈ ι j) (sym eq) ι)
... | no _ = nothing
quotˡ? (p ⊗ p′) (q ⊗ q′) with quotˡ? p q | quotˡ? p′ q′
... | just (_ , a) | just (_ , b) = just (_ , a ⊗ b)
... | _            | _            = nothing
quotˡ? _ _ = nothing

------------------------------------------------------------------------
-- Shapes in the user's words: right-nested products as 6×24×24, a
-- product in a left position in parentheses.

show : S → String
show (ι n)       = showℕ n
show (ι n ⊗ p)   = showℕ n ++ "×" ++ show p
show (s ⊗ p)     = "(" ++ show s ++ ")×" ++ show p

-- Shapes as the user writes them: a list of dimensions, right-nested.
dims : ℕ → List ℕ → S
dims n []       = ι n
dims n (m ∷ ms) = ι n ⊗ dims m ms

_ : show (ι 6 ⊗ (ι 24 ⊗ ι 24)) ≡ "6×24×24"
_ = refl
