{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- Sums over a blocked shape: if s * p ≈ q, summing over the positions
-- of q is summing over the blocks (positions of s) and, inside each,
-- over the positions of p (`combine` is a bijection P s × P p → P q).
--
--   sum-combine   Σₖ f k = Σᵢ Σⱼ f (combine m i j)
--   sum-unblock   Σₖ (unblock m a) k = Σᵢ Σⱼ a (i ⊗ j)
--
-- in any commutative monoid.  This is the array law behind the
-- adjointness of block and unblock (the derivative of selb/imapb).
------------------------------------------------------------------------
open import Algebra.Structures using (IsCommutativeMonoid)
open import Relation.Binary.PropositionalEquality

module Spec.Proofs.SumBlock {A : Set} {_∙_ : A → A → A} {ε : A}
                            (isCM : IsCommutativeMonoid _≡_ _∙_ ε) where

open import Data.Nat as ℕ using (ℕ; zero; suc)
open import Data.Fin as F using (Fin)

open import Spec.Array.Base using (S; ι; _⊗_; P; Ar; sum; _*_≈_)
open import Spec.Array.Index using (combine; div; mod)
open import Spec.Array.Block using (unblock)
open import Spec.Proofs.Sum using (sum-cong; sum₁-cong)
import Spec.Proofs.Sum as Sum

open IsCommutativeMonoid isCM using (assoc; identityˡ)

private
  variable
    s p q : S

  Σ : Ar s A → A
  Σ = sum _∙_ ε

  unι : ∀ {n} → P (ι n) → Fin n
  unι (ι i) = i

  -- sums over Fin n
  ΣF : ∀ {n} → (Fin n → A) → A
  ΣF {n} g = Σ {s = ι n} (λ i → g (unι i))

  ΣF-cong : ∀ {n} {g h : Fin n → A} → (∀ i → g i ≡ h i) → ΣF g ≡ ΣF h
  ΣF-cong {n} eq = sum-cong {s = ι n} λ i → eq (unι i)

  ΣF-suc : ∀ {n} (g : Fin (suc n) → A) → ΣF g ≡ g F.zero ∙ ΣF (λ i → g (F.suc i))
  ΣF-suc {n} g = cong (g F.zero ∙_) (sum₁-cong {n = n} λ { (ι i) → refl })

  -- Fin (k + m) is Fin k followed by Fin m
  ΣF-+ : ∀ k {m} (g : Fin (k ℕ.+ m) → A)
       → ΣF g ≡ ΣF (λ i → g (F.inject+ m i)) ∙ ΣF (λ j → g (F.raise k j))
  ΣF-+ zero    g = sym (identityˡ _)
  ΣF-+ (suc k) {m} g =
    trans (ΣF-suc g)
          (trans (cong (g F.zero ∙_) (ΣF-+ k (λ i → g (F.suc i))))
                 (trans (sym (assoc _ _ _))
                        (cong (_∙ ΣF (λ j → g (F.raise (suc k) j)))
                              (sym (ΣF-suc {n = k} (λ i → g (F.inject+ m i)))))))

  -- Fin (n * k) is n blocks of Fin k
  ΣF-* : ∀ n {k} (g : Fin (n ℕ.* k) → A)
       → ΣF g ≡ ΣF {n} (λ i → ΣF {k} (λ j → g (F.combine i j)))
  ΣF-* zero    g = refl
  ΣF-* (suc n) {k} g =
    trans (ΣF-+ k g)
          (trans (cong (ΣF (λ j → g (F.inject+ (n ℕ.* k) j)) ∙_)
                       (ΣF-* n (λ i → g (F.raise k i))))
                 (sym (ΣF-suc {n = n} (λ i → ΣF {k} (λ j → g (F.combine i j))))))

sum-combine : (m : s * p ≈ q) (f : P q → A)
            → Σ f ≡ Σ {s = s} (λ i → Σ {s = p} (λ j → f (combine m i j)))
sum-combine {s = ι a} {p = ι b} ι f =
  trans (sum-cong {s = ι (a ℕ.* b)} (λ { (ι k) → refl }))
        (trans (ΣF-* a (λ k → f (ι k)))
               (sum-cong {s = ι a} λ { (ι i) → sum-cong {s = ι b} λ { (ι j) → refl } }))
sum-combine {s = s ⊗ s′} {p = p ⊗ p′} (m ⊗ m′) f =
  trans (sum-cong {s = _} λ k → sum-combine m′ (λ k′ → f (k ⊗ k′)))
        (trans (sum-combine m (λ k → Σ {s = s′} (λ i′ → Σ {s = p′} (λ j′ → f (k ⊗ combine m′ i′ j′)))))
               (sum-cong {s = s} λ i →
                  Sum.sum-swap isCM {s = p} {p = s′}
                    (λ j i′ → Σ {s = p′} (λ j′ → f (combine m i j ⊗ combine m′ i′ j′)))))

sum-unblock : (m : s * p ≈ q) (a : Ar (s ⊗ p) A)
            → Σ (unblock m a) ≡ Σ {s = s ⊗ p} a
sum-unblock {s = s} {p = p} m a =
  trans (sum-combine m (unblock m a))
        (sum-cong {s = s} λ i → sum-cong {s = p} λ j →
           cong₂ (λ x y → a (x ⊗ y)) (div-combine m i j) (mod-combine m i j))
  where open import Spec.Array.Index.Properties using (div-combine; mod-combine)
