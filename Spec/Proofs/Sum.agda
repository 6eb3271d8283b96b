{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- Laws of `sum _∙_ ε` (Spec.Array.Base) over any shape.
--
--   sum-cong      pointwise equal arrays have equal sums (no laws needed)
--   and, in a commutative monoid (A, _∙_, ε):
--   sum-zero      a sum of ε's is ε
--   sum-∙         the sum of a pointwise ∙ is the ∙ of the sums
--   sum-swap      Σᵢ Σⱼ f i j = Σⱼ Σᵢ f i j, over two shapes
--   sum-single    an array that is ε except at k sums to its value at k
--   and, with a multiplication that distributes and is annihilated by ε:
--   sum-*-distribˡ / sum-*-distribʳ   x · Σ a = Σ (x · a), Σ a · x = Σ (a · x)
------------------------------------------------------------------------
module Spec.Proofs.Sum where

open import Data.Nat using (zero; suc)
open import Data.Fin as F using (Fin)
open import Algebra.Structures using (IsCommutativeMonoid)
open import Relation.Nullary using (¬_)
open import Relation.Binary.PropositionalEquality

open import Spec.Array.Base using (S; ι; _⊗_; P; Ar; sum; sum₁)

private
  variable
    A : Set
    s p : S

------------------------------------------------------------------------
-- Congruence: needs nothing of _∙_.

sum₁-cong : ∀ {n} {_∙_ : A → A → A} {ε : A} {a b : Ar (ι n) A}
          → (∀ i → a i ≡ b i) → sum₁ _∙_ ε a ≡ sum₁ _∙_ ε b
sum₁-cong {n = zero}  eq = refl
sum₁-cong {n = suc n} {_∙_} eq =
  cong₂ _∙_ (eq (ι F.zero)) (sum₁-cong λ { (ι i) → eq (ι (F.suc i)) })

-- The head/tail view of a vector sum: `tail` is a plain function, so
-- tail (λ i → f (a i)) j and f (tail a j) agree definitionally.
sucι : ∀ {n} → P (ι n) → P (ι (suc n))
sucι (ι i) = ι (F.suc i)

tail : ∀ {n} → Ar (ι (suc n)) A → Ar (ι n) A
tail a i = a (sucι i)

sum₁-suc : ∀ {n} {_∙_ : A → A → A} {ε : A} (a : Ar (ι (suc n)) A)
         → sum₁ _∙_ ε a ≡ _∙_ (a (ι F.zero)) (sum₁ _∙_ ε (tail a))
sum₁-suc {n = n} {_∙_ = _∙_} {ε = ε} a =
  cong (a (ι F.zero) ∙_) (sum₁-cong {n = n} {_∙_ = _∙_} {ε = ε} λ { (ι i) → refl })

sum-cong : ∀ {_∙_ : A → A → A} {ε : A} {a b : Ar s A}
         → (∀ i → a i ≡ b i) → sum _∙_ ε a ≡ sum _∙_ ε b
sum-cong {s = ι n}   eq = sum₁-cong eq
sum-cong {s = s ⊗ p} eq = sum-cong {s = s} λ i → sum-cong {s = p} λ j → eq (i ⊗ j)

-------------------------------------------------------------------------------------------------------------------------------------------
-- In a commutative monoid

module _ {A : Set} {_∙_ : A → A → A} {ε : A}
         (isCM : IsCommutativeMonoid _≡_ _∙_ ε) where

  open IsCommutativeMonoid isCM using (assoc; comm; identityˡ; identityʳ)

  private
    Σ : Ar s A → A
    Σ = sum _∙_ ε

    Σ-suc : ∀ {n} (a : Ar (ι (suc n)) A) → Σ a ≡ a (ι F.zero) ∙ Σ (tail a)
    Σ-suc = sum₁-suc {_∙_ = _∙_} {ε = ε}

    interchange : ∀ a b c d → (a ∙ b) ∙ (c ∙ d) ≡ (a ∙ c) ∙ (b ∙ d)
    interchange a b c d =
      begin
        (a ∙ b) ∙ (c ∙ d)  ≡⟨ assoc a b (c ∙ d) ⟩
        a ∙ (b ∙ (c ∙ d))  ≡⟨ cong (a ∙_) (sym (assoc b c d)) ⟩
        a ∙ ((b ∙ c) ∙ d)  ≡⟨ cong (λ x → a ∙ (x ∙ d)) (comm b c) ⟩
        a ∙ ((c ∙ b) ∙ d)  ≡⟨ cong (a ∙_) (assoc c b d) ⟩
        a ∙ (c ∙ (b ∙ d))  ≡⟨ sym (assoc a c (b ∙ d)) ⟩
        (a ∙ c) ∙ (b ∙ d)  ∎
      where open ≡-Reasoning

  -- a sum of ε's is ε
  sum-zero : {a : Ar s A} → (∀ i → a i ≡ ε) → Σ a ≡ ε
  sum-zero {s = ι zero}    eq = refl
  sum-zero {s = ι (suc n)} {a} eq =
    trans (Σ-suc a)
          (trans (cong₂ _∙_ (eq (ι F.zero)) (sum-zero {s = ι n} λ i → eq (sucι i)))
                 (identityˡ ε))
  sum-zero {s = s ⊗ p} eq = sum-zero {s = s} λ i → sum-zero {s = p} λ j → eq (i ⊗ j)

  -- the sum of pointwise sums
  sum-∙ : (a b : Ar s A) → Σ (λ i → a i ∙ b i) ≡ Σ a ∙ Σ b
  sum-∙ {s = ι zero}    a b = sym (identityˡ ε)
  sum-∙ {s = ι (suc n)} a b =
    begin
      Σ (λ i → a i ∙ b i)
        ≡⟨ Σ-suc (λ i → a i ∙ b i) ⟩
      (a₀ ∙ b₀) ∙ Σ (λ i → tail a i ∙ tail b i)
        ≡⟨ cong ((a₀ ∙ b₀) ∙_) (sum-∙ {s = ι n} (tail a) (tail b)) ⟩
      (a₀ ∙ b₀) ∙ (Σ (tail a) ∙ Σ (tail b))
        ≡⟨ interchange _ _ _ _ ⟩
      (a₀ ∙ Σ (tail a)) ∙ (b₀ ∙ Σ (tail b))
        ≡⟨ sym (cong₂ _∙_ (Σ-suc a) (Σ-suc b)) ⟩
      Σ a ∙ Σ b
        ∎
    where open ≡-Reasoning
          a₀ = a (ι F.zero)
          b₀ = b (ι F.zero)
  sum-∙ {s = s ⊗ p} a b =
    trans (sum-cong {s = s} λ i → sum-∙ {s = p} (λ j → a (i ⊗ j)) (λ j → b (i ⊗ j)))
          (sum-∙ {s = s} _ _)

  -- exchanging two sums
  sum-swap : (f : P s → P p → A)
           → Σ {s = s} (λ i → Σ {s = p} (f i)) ≡ Σ {s = p} (λ j → Σ {s = s} (λ i → f i j))
  sum-swap {s = ι zero}    {p} f = sym (sum-zero {s = p} λ _ → refl)
  sum-swap {s = ι (suc n)} {p} f =
    begin
      Σ {s = ι (suc n)} (λ i → Σ (f i))
        ≡⟨ Σ-suc (λ i → Σ (f i)) ⟩
      Σ (f (ι F.zero)) ∙ Σ {s = ι n} (λ i → Σ (f (sucι i)))
        ≡⟨ cong (Σ (f (ι F.zero)) ∙_) (sum-swap {s = ι n} {p} (λ i → f (sucι i))) ⟩
      Σ (f (ι F.zero)) ∙ Σ {s = p} (λ j → Σ {s = ι n} (λ i → f (sucι i) j))
        ≡⟨ sym (sum-∙ {s = p} _ _) ⟩
      Σ {s = p} (λ j → f (ι F.zero) j ∙ Σ {s = ι n} (λ i → f (sucι i) j))
        ≡⟨ sum-cong {s = p} (λ j → sym (Σ-suc (λ i → f i j))) ⟩
      Σ {s = p} (λ j → Σ {s = ι (suc n)} (λ i → f i j))
        ∎
    where open ≡-Reasoning
  sum-swap {s = s ⊗ s′} {p} f =
    trans (sum-cong {s = s} λ i → sum-swap {s = s′} {p} (λ i′ → f (i ⊗ i′)))
          (sum-swap {s = s} {p} (λ i j → Σ {s = s′} (λ i′ → f (i ⊗ i′) j)))

  -- an array that is ε except at k
  sum-single : (k : P s) {a : Ar s A} → (∀ i → ¬ i ≡ k → a i ≡ ε) → Σ a ≡ a k
  sum-single (ι F.zero) {a} eq =
    trans (Σ-suc a)
          (trans (cong (a (ι F.zero) ∙_) (sum-zero {s = ι _} {tail a} λ { (ι i) → eq (ι (F.suc i)) λ () }))
                 (identityʳ _))
  sum-single (ι (F.suc k)) {a} eq =
    trans (Σ-suc a)
          (trans (cong₂ _∙_ (eq (ι F.zero) λ ())
                            (sum-single (ι k) {tail a} λ { (ι i) ne → eq (ι (F.suc i)) λ { refl → ne refl } }))
                 (identityˡ _))
  sum-single (k ⊗ k′) {a} eq =
    trans (sum-single k λ i i≢k → sum-zero λ j → eq (i ⊗ j) λ e → i≢k (cong outer e))
          (sum-single k′ λ j j≢k′ → eq (k ⊗ j) λ e → j≢k′ (cong inner e))
    where
      outer : P (_ ⊗ _) → P _
      outer (i ⊗ _) = i
      inner : P (_ ⊗ _) → P _
      inner (_ ⊗ j) = j

  ----------------------------------------------------------------------
  -- With a multiplication that distributes over ∙ and is annihilated by ε

  module _ {_*_ : A → A → A}
           (distribˡ : ∀ x y z → x * (y ∙ z) ≡ (x * y) ∙ (x * z))
           (zeroʳ : ∀ x → x * ε ≡ ε) where

    sum-*-distribˡ : ∀ x (a : Ar s A) → x * Σ a ≡ Σ (λ i → x * a i)
    sum-*-distribˡ {s = ι zero}    x a = zeroʳ x
    sum-*-distribˡ {s = ι (suc n)} x a =
      trans (cong (x *_) (Σ-suc a))
            (trans (distribˡ x _ _)
                   (trans (cong ((x * a (ι F.zero)) ∙_) (sum-*-distribˡ {s = ι n} x (tail a)))
                          (sym (Σ-suc (λ i → x * a i)))))
    sum-*-distribˡ {s = s ⊗ p} x a =
      trans (sum-*-distribˡ {s = s} x _)
            (sum-cong {s = s} λ i → sum-*-distribˡ {s = p} x (λ j → a (i ⊗ j)))

  module _ {_*_ : A → A → A}
           (distribʳ : ∀ x y z → (y ∙ z) * x ≡ (y * x) ∙ (z * x))
           (zeroˡ : ∀ x → ε * x ≡ ε) where

    sum-*-distribʳ : ∀ x (a : Ar s A) → Σ a * x ≡ Σ (λ i → a i * x)
    sum-*-distribʳ {s = ι zero}    x a = zeroˡ x
    sum-*-distribʳ {s = ι (suc n)} x a =
      trans (cong (_* x) (Σ-suc a))
            (trans (distribʳ x _ _)
                   (trans (cong ((a (ι F.zero) * x) ∙_) (sum-*-distribʳ {s = ι n} x (tail a)))
                          (sym (Σ-suc (λ i → a i * x)))))
    sum-*-distribʳ {s = s ⊗ p} x a =
      trans (sum-*-distribʳ {s = s} x _)
            (sum-cong {s = s} λ i → sum-*-distribʳ {s = p} x (λ j → a (i ⊗ j)))
