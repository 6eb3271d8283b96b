{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- Inner products, and how the operations on gradient environments of
-- Spec.Lang.AD act on them (the bookkeeping half of ∇-correct).
--
--   ⟨ a , b ⟩          Σᵢ aᵢ · bᵢ over all positions
--   ip Γ δ ρ v         Σₓ ⟨ ⟦ δₓ ⟧ ρ , vₓ ⟩ over the array variables x
--                      of Γ (δ a gradient environment, v tangents)
--
-- ip of env-zero is 0, of update δ x (_⊞ s) it grows by ⟨ ⟦s⟧ , vₓ ⟩,
-- of env-zipWith (close b) it is that of env-map b plus the other's
-- (close leaves an entry alone where the body's is zero, and b zero
-- means 0), and of env-map b (closing every entry
-- with a binder b) it is b's linear functional applied to the ip of
-- the body's environment (`Lin`: Σ for sums, a decided selection for
-- ix-minus).  Needs the Laws of the scalars.
------------------------------------------------------------------------
open import Spec.Scalar using (Scalar)
open import Spec.Scalar.Laws using (Laws)

module Spec.Proofs.AD.Env (𝕊 : Scalar) (laws : Laws 𝕊) where

open import Data.Fin as F using (Fin)
open import Data.Product using (_×_; _,_; ∃)
open import Data.Unit using (⊤; tt)
open import Relation.Nullary using (Dec; yes; no; ¬_)
open import Relation.Binary.PropositionalEquality hiding (subst)

open import Spec.Array.Base as A using (S; ι; _⊗_; P; Ar; K; zipWith; unit)
open import Data.Nat using (zero; suc)
open import Spec.Lang.Syntax
open import Spec.Lang.Eval 𝕊
open import Spec.Lang.AD
open import Spec.Proofs.Forward 𝕊
import Spec.Proofs.Sum as Sum
open Sum using (sum-cong)

open Scalar 𝕊 using (R; 0#; 1#; _+_; _*_; -_)
open Laws laws

private
  variable
    Γ Δ : Ctx
    s p q u : S

------------------------------------------------------------------------
-- Sums of scalars

ΣR : Ar s R → R
ΣR = A.sum _+_ 0#

ΣR-zero : {a : Ar s R} → (∀ i → a i ≡ 0#) → ΣR a ≡ 0#
ΣR-zero = Sum.sum-zero +-isCommutativeMonoid

ΣR-+ : (a b : Ar s R) → ΣR (λ i → a i + b i) ≡ ΣR a + ΣR b
ΣR-+ = Sum.sum-∙ +-isCommutativeMonoid

ΣR-swap : (f : P s → P p → R) → ΣR {s = s} (λ i → ΣR {s = p} (f i)) ≡ ΣR {s = p} (λ j → ΣR {s = s} (λ i → f i j))
ΣR-swap = Sum.sum-swap +-isCommutativeMonoid

ΣR-*ˡ : ∀ x (a : Ar s R) → x * ΣR a ≡ ΣR (λ i → x * a i)
ΣR-*ˡ = Sum.sum-*-distribˡ +-isCommutativeMonoid distribˡ zeroʳ

ΣR-*ʳ : ∀ x (a : Ar s R) → ΣR a * x ≡ ΣR (λ i → a i * x)
ΣR-*ʳ = Sum.sum-*-distribʳ +-isCommutativeMonoid distribʳ zeroˡ

ΣR-single : (k : P s) {a : Ar s R} → (∀ i → ¬ i ≡ k → a i ≡ 0#) → ΣR a ≡ a k
ΣR-single = Sum.sum-single +-isCommutativeMonoid

------------------------------------------------------------------------
-- Inner products of arrays

⟨_,_⟩ : Ar s R → Ar s R → R
⟨ a , b ⟩ = ΣR (λ i → a i * b i)

⟨⟩-cong : {a a′ b b′ : Ar s R} → (∀ i → a i ≡ a′ i) → (∀ i → b i ≡ b′ i) → ⟨ a , b ⟩ ≡ ⟨ a′ , b′ ⟩
⟨⟩-cong ea eb = sum-cong λ i → cong₂ _*_ (ea i) (eb i)

⟨⟩-zeroˡ : (b : Ar s R) → ⟨ K 0# , b ⟩ ≡ 0#
⟨⟩-zeroˡ b = ΣR-zero λ i → zeroˡ (b i)

⟨⟩-zeroʳ : (a : Ar s R) → ⟨ a , K 0# ⟩ ≡ 0#
⟨⟩-zeroʳ a = ΣR-zero λ i → zeroʳ (a i)

⟨⟩-+ˡ : (a b c : Ar s R) → ⟨ zipWith _+_ a b , c ⟩ ≡ ⟨ a , c ⟩ + ⟨ b , c ⟩
⟨⟩-+ˡ a b c = trans (sum-cong λ i → distribʳ (c i) (a i) (b i)) (ΣR-+ (λ i → a i * c i) (λ i → b i * c i))

⟨⟩-+ʳ : (a b c : Ar s R) → ⟨ a , zipWith _+_ b c ⟩ ≡ ⟨ a , b ⟩ + ⟨ a , c ⟩
⟨⟩-+ʳ a b c = trans (sum-cong λ i → distribˡ (a i) (b i) (c i)) (ΣR-+ (λ i → a i * b i) (λ i → a i * c i))

⟨⟩-unit : (a b : Ar unit R) → ⟨ a , b ⟩ ≡ a (ι F.zero) * b (ι F.zero)
⟨⟩-unit a b = +-identityʳ _

-- ⟨ Σₖ f k , w ⟩ = Σₖ ⟨ f k , w ⟩
⟨⟩-Σ : (f : P u → Ar s R) (w : Ar s R) → ⟨ Σ f , w ⟩ ≡ ΣR (λ k → ⟨ f k , w ⟩)
⟨⟩-Σ {u = u} {s = s} f w =
  trans (sum-cong (λ l → ΣR-*ʳ (w l) (λ k → f k l)))
        (ΣR-swap {s = s} {p = u} (λ l k → f k l * w l))

------------------------------------------------------------------------
-- Linear functionals on P u → R (the meaning of a binder, per entry)

record Lin (u : S) : Set where
  field
    B    : (P u → R) → R
    B-cong : {f g : P u → R} → (∀ k → f k ≡ g k) → B f ≡ B g
    B-0  : B (λ _ → 0#) ≡ 0#
    B-+  : (f g : P u → R) → B (λ k → f k + g k) ≡ B f + B g
    B-*ʳ : (f : P u → R) (c : R) → B (λ k → f k * c) ≡ B f * c
    B-Σ  : ∀ {q} (F : P u → P q → R) → B (λ k → ΣR (F k)) ≡ ΣR (λ l → B (λ k → F k l))

open Lin public

Lin-Σ : Lin u
Lin-Σ {u} = record
  { B = ΣR
  ; B-cong = sum-cong
  ; B-0 = ΣR-zero {s = u} λ _ → refl
  ; B-+ = ΣR-+
  ; B-*ʳ = λ f c → sym (ΣR-*ʳ c f)
  ; B-Σ = λ {q} F → ΣR-swap {s = u} {p = q} F
  }

atR : ∀ {X : P u → Set} → Dec (∃ X) → (P u → R) → R
atR (yes (k , _)) f = f k
atR (no  _)       f = 0#

Lin-at : ∀ {X : P u → Set} → Dec (∃ X) → Lin u
Lin-at d = record
  { B = atR d
  ; B-cong = cong-at d
  ; B-0 = B0 d
  ; B-+ = B+ d
  ; B-*ʳ = B* d
  ; B-Σ = BΣ d
  }
  where
    cong-at : ∀ d {f g : P _ → R} → (∀ k → f k ≡ g k) → atR d f ≡ atR d g
    cong-at (yes (k , _)) e = e k
    cong-at (no  _)       e = refl
    B0 : ∀ d → atR d (λ _ → 0#) ≡ 0#
    B0 (yes _) = refl
    B0 (no  _) = refl
    B+ : ∀ d (f g : P _ → R) → atR d (λ k → f k + g k) ≡ atR d f + atR d g
    B+ (yes _) f g = refl
    B+ (no  _) f g = sym (+-identityˡ 0#)
    B* : ∀ d (f : P _ → R) (c : R) → atR d (λ k → f k * c) ≡ atR d f * c
    B* (yes _) f c = refl
    B* (no  _) f c = sym (zeroˡ c)
    BΣ : ∀ d {q} (F : P _ → P q → R) → atR d (λ k → ΣR (F k)) ≡ ΣR (λ l → atR d (λ k → F k l))
    BΣ (yes _) F = refl
    BΣ (no  _) {q} F = sym (ΣR-zero {s = q} λ _ → refl)

------------------------------------------------------------------------
-- Inner products of gradient environments

ip : (Γ : Ctx) → EnvE Γ Δ → Env Δ → TEnv Γ → R
ip ε          _       ρ _       = 0#
ip (Γ ▹ ar s) (δ , e) ρ (v , w) = ip Γ δ ρ v + ⟨ ⟦ e ⟧ ρ , w ⟩
ip (Γ ▹ ix s) δ       ρ v       = ip Γ δ ρ v

ip-zero : (Γ : Ctx) (ρ : Env Δ) (v : TEnv Γ) → ip Γ (env-zero {Γ} {Δ}) ρ v ≡ 0#
ip-zero ε          ρ v       = refl
ip-zero (Γ ▹ ar s) ρ (v , w) = trans (cong₂ _+_ (ip-zero Γ ρ v) (⟨⟩-zeroˡ w)) (+-identityˡ 0#)
ip-zero (Γ ▹ ix s) ρ v       = ip-zero Γ ρ v

ip-update : (Γ : Ctx) (δ : EnvE Γ Δ) (x : ar s ∈ Γ) (sd : E Δ (ar s)) (ρ : Env Δ) (v : TEnv Γ)
          → ip Γ (update {Γ} δ x (_⊞ sd)) ρ v ≡ ip Γ δ ρ v + ⟨ ⟦ sd ⟧ ρ , tlookup {Γ} v x ⟩
ip-update (Γ ▹ ar _) (δ , e) (var# zero refl) sd ρ (v , w) =
  trans (cong (ip Γ δ ρ v +_) (⟨⟩-+ˡ (⟦ e ⟧ ρ) (⟦ sd ⟧ ρ) w)) (sym (+-assoc _ _ _))
ip-update (Γ ▹ ar _) (δ , e) (var# (suc n) p) sd ρ (v , w) =
  trans (cong (_+ ⟨ ⟦ e ⟧ ρ , w ⟩) (ip-update Γ δ (var# n p) sd ρ v))
        (trans (+-assoc _ _ _)
               (trans (cong (ip Γ δ ρ v +_) (+-comm _ _)) (sym (+-assoc _ _ _))))
ip-update (Γ ▹ ix _) δ (var# (suc n) p) sd ρ v = ip-update Γ δ (var# n p) sd ρ v

-- closing every entry with a binder whose meaning is a linear functional
ip-map : (Γ : Ctx) (L : Lin u) (b : ∀ {q} → E (Δ ▹ ix u) (ar q) → E Δ (ar q)) (ρ : Env Δ)
       → (∀ {q} (e : E (Δ ▹ ix u) (ar q)) l → ⟦ b e ⟧ ρ l ≡ B L (λ k → ⟦ e ⟧ (ρ , k) l))
       → (δ : EnvE Γ (Δ ▹ ix u)) (v : TEnv Γ)
       → ip Γ (env-map {Γ = Γ} b δ) ρ v ≡ B L (λ k → ip Γ δ (ρ , k) v)
ip-map ε L b ρ hb δ v = sym (B-0 L)
ip-map (Γ ▹ ar s) L b ρ hb (δ , e) (v , w) =
  begin
    ip Γ (env-map {Γ = Γ} b δ) ρ v + ⟨ ⟦ b e ⟧ ρ , w ⟩
      ≡⟨ cong₂ _+_ (ip-map Γ L b ρ hb δ v) (⟨⟩-cong (hb e) (λ _ → refl)) ⟩
    B L (λ k → ip Γ δ (ρ , k) v) + ΣR (λ l → B L (λ k → ⟦ e ⟧ (ρ , k) l) * w l)
      ≡⟨ cong (B L (λ k → ip Γ δ (ρ , k) v) +_)
              (sum-cong λ l → sym (B-*ʳ L (λ k → ⟦ e ⟧ (ρ , k) l) (w l))) ⟩
    B L (λ k → ip Γ δ (ρ , k) v) + ΣR (λ l → B L (λ k → ⟦ e ⟧ (ρ , k) l * w l))
      ≡⟨ cong (B L (λ k → ip Γ δ (ρ , k) v) +_) (sym (B-Σ L (λ k l → ⟦ e ⟧ (ρ , k) l * w l))) ⟩
    B L (λ k → ip Γ δ (ρ , k) v) + B L (λ k → ⟨ ⟦ e ⟧ (ρ , k) , w ⟩)
      ≡⟨ sym (B-+ L _ _) ⟩
    B L (λ k → ip Γ δ (ρ , k) v + ⟨ ⟦ e ⟧ (ρ , k) , w ⟩)
      ∎
  where open ≡-Reasoning
ip-map (Γ ▹ ix s) L b ρ hb δ v = ip-map Γ L b ρ hb δ v

-- an entry closed by a binder whose closure of zero means 0 adds the
-- closure (close leaves d alone exactly when the body's entry is zero)
close-sem : ∀ {q} (b : E (Δ ▹ ix u) (ar q) → E Δ (ar q)) (ρ : Env Δ)
          → (∀ l → ⟦ b zero ⟧ ρ l ≡ 0#) → (z : E (Δ ▹ ix u) (ar q)) (d : E Δ (ar q))
          → ∀ l → ⟦ close b z d ⟧ ρ l ≡ ⟦ b z ⟧ ρ l + ⟦ d ⟧ ρ l
close-sem b ρ h0 z d l with zero? z
... | is-zero = sym (trans (cong (_+ ⟦ d ⟧ ρ l) (h0 l)) (+-identityˡ _))
... | other = refl

ip-close : (Γ : Ctx) (b : ∀ {q} → E (Δ ▹ ix u) (ar q) → E Δ (ar q)) (ρ : Env Δ)
         → (∀ {q} l → ⟦ b {q} zero ⟧ ρ l ≡ 0#)
         → (δ : EnvE Γ (Δ ▹ ix u)) (δ′ : EnvE Γ Δ) (v : TEnv Γ)
         → ip Γ (env-zipWith {Γ = Γ} (close b) δ δ′) ρ v ≡ ip Γ (env-map {Γ = Γ} b δ) ρ v + ip Γ δ′ ρ v
ip-close ε          b ρ h0 δ       δ′        v       = sym (+-identityˡ 0#)
ip-close (Γ ▹ ar s) b ρ h0 (δ , e) (δ′ , e′) (v , w) =
  trans (cong₂ _+_ (ip-close Γ b ρ h0 δ δ′ v)
                   (trans (⟨⟩-cong (close-sem b ρ h0 e e′) (λ _ → refl))
                          (⟨⟩-+ˡ (⟦ b e ⟧ ρ) (⟦ e′ ⟧ ρ) w)))
        (+-interchange _ _ _ _)
ip-close (Γ ▹ ix s) b ρ h0 δ       δ′        v       = ip-close Γ b ρ h0 δ δ′ v

-- differentiating under a binder
ip-map-bind : ∀ {u} (L : Lin u) (b : ∀ {q} → E (Δ ▹ ix u) (ar q) → E Δ (ar q)) (ρ : Env Δ)
            → (∀ {q} (e : E (Δ ▹ ix u) (ar q)) l → ⟦ b e ⟧ ρ l ≡ B L (λ k → ⟦ e ⟧ (ρ , k) l))
            → (e sd : E (Δ ▹ ix u) (ar s)) (δ : EnvE Δ Δ) (v : TEnv Δ)
            → (∀ k → ip Δ (∇ e sd (env-zero {Δ ▹ ix u})) (ρ , k) v
                     ≡ ip Δ (env-zero {Δ ▹ ix u}) (ρ , k) v + ⟨ ⟦ sd ⟧ (ρ , k) , D⟦ e ⟧ (ρ , k) v ⟩)
            → ip Δ (map-bind b e sd δ) ρ v
              ≡ ip Δ δ ρ v + B L (λ k → ⟨ ⟦ sd ⟧ (ρ , k) , D⟦ e ⟧ (ρ , k) v ⟩)
ip-map-bind {Δ = Δ} {u = u} L b ρ hb e sd δ v ih =
  trans (ip-close Δ b ρ (λ l → trans (hb zero l) (B-0 L)) (∇ e sd (env-zero {Δ ▹ ix u})) δ v)
        (trans (cong (_+ ip Δ δ ρ v)
                     (trans (ip-map Δ L b ρ hb (∇ e sd (env-zero {Δ ▹ ix u})) v)
                            (B-cong L λ k → trans (ih k)
                              (trans (cong (_+ ⟨ ⟦ sd ⟧ (ρ , k) , D⟦ e ⟧ (ρ , k) v ⟩)
                                           (ip-zero Δ (ρ , k) v))
                                     (+-identityˡ _)))))
               (+-comm _ _))
