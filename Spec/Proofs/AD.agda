{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- Reverse mode is the adjoint of forward mode (∇-correct).
--
-- For every expression e of array sort, seed s, gradient environment
-- δ, environment ρ and tangents v:
--
--   ip Δ (∇ e s δ) ρ v  ≡  ip Δ δ ρ v + ⟨ ⟦ s ⟧ ρ , D⟦ e ⟧ ρ v ⟩
--
-- i.e. the entries ∇ adds to δ, paired with the tangents of their
-- variables, sum to the seed paired with the forward derivative of e.
-- From δ = env-zero this is the statement of the paper (∇₀-correct):
--   Σₓ ⟨ ⟦ (∇₀ e s)ₓ ⟧ ρ , vₓ ⟩ = ⟨ ⟦ s ⟧ ρ , D⟦ e ⟧ ρ v ⟩.
--
-- By induction on e; each case is an adjointness identity of the
-- array operation (selection vs. zero-but map, slide vs. backslide,
-- block vs. unblock, sum vs. broadcast) plus ring algebra.  Needs
-- Laws 𝕊 (with scaledown-*).
------------------------------------------------------------------------
open import Spec.Scalar using (Scalar)
open import Spec.Scalar.Laws using (Laws)

module Spec.Proofs.AD (𝕊 : Scalar) (laws : Laws 𝕊) where

open import Data.Empty using (⊥-elim)
open import Data.Fin as F using (Fin)
open import Data.Product using (_,_; ∃)
open import Relation.Nullary using (Dec; yes; no; ¬_)
open import Relation.Binary.PropositionalEquality hiding (subst)

open import Spec.Array.Base as A using (S; ι; _⊗_; P; Ar; K; unit)
open import Spec.Array.Index as Ix using (_⊖ₚ_; _⊖ᵣₚ_; combine)
open import Spec.Array.Index.Properties using (div-combine; mod-combine)
import Spec.Array.Slide as Sl
open import Spec.Array.Slide.Properties using (slide-backslide-adjoint)
open import Spec.Lang.Syntax
open import Spec.Lang.Subst using (↑_)
open import Spec.Lang.Eval 𝕊
open import Spec.Lang.AD
open import Spec.Proofs.Forward 𝕊
open import Spec.Proofs.AD.Env 𝕊 laws
open import Spec.Proofs.Sum using (sum-cong)
open import Spec.Proofs.Ren 𝕊 using (eval-↑)
open import Spec.Proofs.Val 𝕊 using (zero-but-cong)
open import Spec.Proofs.SumBlock (Laws.+-isCommutativeMonoid laws) using (sum-combine)

open Scalar 𝕊 using (R; 0#; 1#; _+_; _*_; -_) renaming (scaledown to scaledownʳ)
open Laws laws

private
  variable
    Γ Δ : Ctx
    s p q u : S

------------------------------------------------------------------------
-- Small facts

private
  if-eq-refl : (k : P s) (a : Ar p R) (l : P p) → if-eq (k ≟ₚ k) a l ≡ a l
  if-eq-refl k a l with k ≟ₚ k
  ... | yes _  = refl
  ... | no  ne = ⊥-elim (ne refl)

  if-eq-ne : {k k′ : P s} → ¬ k ≡ k′ → (a : Ar p R) (l : P p) → if-eq (k ≟ₚ k′) a l ≡ 0#
  if-eq-ne {k = k} {k′} ne a l with k ≟ₚ k′
  ... | yes e = ⊥-elim (ne e)
  ... | no  _ = refl

  ΣR-cong : (s : S) {a b : Ar s R} → (∀ i → a i ≡ b i) → ΣR {s = s} a ≡ ΣR {s = s} b
  ΣR-cong s = sum-cong {s = s}

  -- (I + B) + A ≡ I + (A + B)
  swap-tail : ∀ I A B → (I + B) + A ≡ I + (A + B)
  swap-tail I A B = trans (+-assoc I B A) (cong (I +_) (+-comm B A))

  -- ⟨ w , Σₖ f k ⟩ = Σₖ ⟨ w , f k ⟩
  ⟨⟩-Σʳ : (w : Ar s R) (f : P u → Ar s R) → ⟨ w , Σ f ⟩ ≡ ΣR (λ k → ⟨ w , f k ⟩)
  ⟨⟩-Σʳ {s = s} {u = u} w f =
    trans (sum-cong (λ l → ΣR-*ˡ (w l) (λ k → f k l)))
          (ΣR-swap {s = s} {p = u} (λ l k → w l * f k l))

  -- Σₖ [k = x] a_l · b k = a_l · b x
  single-* : (x : P s) (a : Ar p R) (l : P p) (b : P s → R)
           → ΣR (λ k → if-eq (k ≟ₚ x) a l * b k) ≡ a l * b x
  single-* x a l b =
    trans (ΣR-single x (λ k ne → trans (cong (_* b k) (if-eq-ne ne a l)) (zeroˡ (b k))))
          (cong (_* b x) (if-eq-refl x a l))

  -- Σₖ Σⱼ [k = x] a_j · b k j = Σⱼ a_j · b x j
  single-Σ* : (x : P s) (a : Ar p R) (b : P s → P p → R)
            → ΣR (λ k → ΣR (λ j → if-eq (k ≟ₚ x) a j * b k j)) ≡ ΣR (λ j → a j * b x j)
  single-Σ* x a b =
    trans (ΣR-single x (λ k ne → ΣR-zero λ j → trans (cong (_* b k j) (if-eq-ne ne a j)) (zeroˡ _)))
          (sum-cong λ j → cong (_* b x j) (if-eq-refl x a j))

  zb-adj : ∀ {x y : P q} (d : Dec (x ≡ y)) (a b : Ar s R) → ⟨ if-eq d a , b ⟩ ≡ ⟨ a , if-eq d b ⟩
  zb-adj (yes _) a b = refl
  zb-adj (no  _) a b = trans (⟨⟩-zeroˡ b) (sym (⟨⟩-zeroʳ a))

  at-sem : ∀ {X : P u → Set} (d : Dec (∃ X)) (f : P u → Ar s R) (l : P s)
         → at d f l ≡ atR d (λ k → f k l)
  at-sem (yes _) f l = refl
  at-sem (no  _) f l = refl

  at-adj : ∀ {X : P u → Set} (d : Dec (∃ X)) (w : Ar s R) (w′ : P u → Ar s R) (f : P u → Ar s R)
         → (∀ k l → w′ k l ≡ w l)
         → atR d (λ k → ⟨ w′ k , f k ⟩) ≡ ⟨ w , at d f ⟩
  at-adj (yes (k , _)) w w′ f h = ⟨⟩-cong (h k) (λ _ → refl)
  at-adj (no  _)       w w′ f h = sym (⟨⟩-zeroʳ w)

------------------------------------------------------------------------
-- Elementwise functions: the seed times the declared derivative

-- ⟦ deriv f e ⟧ is f′ f at ⟦ e ⟧: the declared derivatives, by definition
deriv-sem : (f : Fn) (e : E Δ (ar s)) (ρ : Env Δ) (k : P s) → ⟦ deriv f e ⟧ ρ k ≡ f′ f (⟦ e ⟧ ρ k)
deriv-sem Fn.logistic e ρ k = refl
deriv-sem Fn.exp      e ρ k = refl
deriv-sem Fn.log      e ρ k = refl
deriv-sem Fn.recip    e ρ k = refl
deriv-sem Fn.sqrt     e ρ k = refl
deriv-sem Fn.relu     e ρ k = refl
deriv-sem Fn.step     e ρ k = refl
deriv-sem Fn.detach   e ρ k = refl
deriv-sem Fn.erf      e ρ k = refl
deriv-sem Fn.derf     e ρ k = refl

private
  -- ⟨ s · f′(e) , De ⟩ = ⟨ s , f′(e) · De ⟩
  un-adj : (f : Fn) (e sd : E Δ (ar s)) (ρ : Env Δ) (v : TEnv Δ)
         → ⟨ ⟦ sd ⊠ deriv f e ⟧ ρ , D⟦ e ⟧ ρ v ⟩ ≡ ⟨ ⟦ sd ⟧ ρ , D⟦ un f e ⟧ ρ v ⟩
  un-adj {s = s} f e sd ρ v = ΣR-cong s λ k →
    trans (cong (λ x → (⟦ sd ⟧ ρ k * x) * D⟦ e ⟧ ρ v k) (deriv-sem f e ρ k)) (*-assoc _ _ _)

------------------------------------------------------------------------
-- The theorem

∇-correct : (e sd : E Δ (ar s)) (δ : EnvE Δ Δ) (ρ : Env Δ) (v : TEnv Δ)
          → ip Δ (∇ e sd δ) ρ v ≡ ip Δ δ ρ v + ⟨ ⟦ sd ⟧ ρ , D⟦ e ⟧ ρ v ⟩
∇-correct {Δ = Δ} (var x) sd δ ρ v = ip-update Δ δ x sd ρ v
∇-correct zero sd δ ρ v = sym (trans (cong (_ +_) (⟨⟩-zeroʳ (⟦ sd ⟧ ρ))) (+-identityʳ _))
∇-correct one  sd δ ρ v = sym (trans (cong (_ +_) (⟨⟩-zeroʳ (⟦ sd ⟧ ρ))) (+-identityʳ _))
∇-correct (imaps {s = t} e) sd δ ρ v =
  trans (ip-map-bind Lin-Σ sum ρ (λ _ _ → refl) e (sels (↑ sd) (var v₀)) δ v
                     (λ k → ∇-correct e _ _ (ρ , k) v))
        (cong (_ +_) (ΣR-cong t λ k →
           trans (⟨⟩-unit (⟦ sels (↑ sd) (var v₀) ⟧ (ρ , k)) (D⟦ e ⟧ (ρ , k) v))
                 (cong (_* D⟦ e ⟧ (ρ , k) v (ι F.zero)) (eval-↑ sd ρ k k))))
∇-correct (sels {s = t} e i) sd δ ρ v =
  trans (∇-correct e _ δ ρ v)
        (cong (_ +_) (trans
          (ΣR-cong t λ k → cong (_* D⟦ e ⟧ ρ v k)
             (zero-but-cong {i = k} {i′ = k} {a = ⟦ ↑ sd ⟧ (ρ , k)} {b = ⟦ sd ⟧ ρ} refl (eval-↑ i ρ k) (eval-↑ sd ρ k) (ι F.zero)))
          (trans (single-* (⟦ i ⟧ ρ) (⟦ sd ⟧ ρ) (ι F.zero) (D⟦ e ⟧ ρ v))
                 (sym (⟨⟩-unit (⟦ sd ⟧ ρ) (D⟦ sels e i ⟧ ρ v))))))
∇-correct (imap {s = t} {p = p} e) sd δ ρ v =
  trans (ip-map-bind Lin-Σ sum ρ (λ _ _ → refl) e (sel (↑ sd) (var v₀)) δ v
                     (λ k → ∇-correct e _ _ (ρ , k) v))
        (cong (_ +_) (ΣR-cong t λ k → ΣR-cong p λ j → cong (_* _) (eval-↑ sd ρ k (k ⊗ j))))
∇-correct (sel {s = t} {p = p} e i) sd δ ρ v =
  trans (∇-correct e _ δ ρ v)
        (cong (_ +_) (trans
          (ΣR-cong t λ k → ΣR-cong p λ j → cong (_* D⟦ e ⟧ ρ v (k ⊗ j))
             (zero-but-cong {i = k} {i′ = k} {a = ⟦ ↑ sd ⟧ (ρ , k)} {b = ⟦ sd ⟧ ρ} refl (eval-↑ i ρ k) (eval-↑ sd ρ k) j))
          (single-Σ* (⟦ i ⟧ ρ) (⟦ sd ⟧ ρ) (λ k j → D⟦ e ⟧ ρ v (k ⊗ j)))))
∇-correct (imapb {s = t} {p = p} m e) sd δ ρ v =
  trans (ip-map-bind Lin-Σ sum ρ (λ _ _ → refl) e (selb m (↑ sd) (var v₀)) δ v
                     (λ k → ∇-correct e _ _ (ρ , k) v))
        (cong (_ +_) (trans
          (ΣR-cong t λ k → ΣR-cong p λ j → cong₂ _*_ (eval-↑ sd ρ k (combine m k j))
             (cong₂ (λ a b → D⟦ e ⟧ (ρ , a) v b) (sym (div-combine m k j)) (sym (mod-combine m k j))))
          (sym (sum-combine m (λ l → ⟦ sd ⟧ ρ l * D⟦ imapb m e ⟧ ρ v l)))))
∇-correct (selb {s = t} {p = p} m e i) sd δ ρ v =
  trans (∇-correct e _ δ ρ v)
        (cong (_ +_) (trans
          (sum-combine m (λ l → g (Ix.div m l) (Ix.mod m l) * D⟦ e ⟧ ρ v l))
          (trans (ΣR-cong t λ k → ΣR-cong p λ j →
                    cong (_* D⟦ e ⟧ ρ v (combine m k j))
                      (trans (cong₂ g (div-combine m k j) (mod-combine m k j))
                             (zero-but-cong {i = k} {i′ = k} {a = ⟦ ↑ sd ⟧ (ρ , k)} {b = ⟦ sd ⟧ ρ}
                                refl (eval-↑ i ρ k) (eval-↑ sd ρ k) j)))
                 (single-Σ* (⟦ i ⟧ ρ) (⟦ sd ⟧ ρ) (λ k j → D⟦ e ⟧ ρ v (combine m k j))))))
  where g = λ a b → if-eq (a ≟ₚ ⟦ ↑ i ⟧ (ρ , a)) (⟦ ↑ sd ⟧ (ρ , a)) b
∇-correct (sum {s = t} e) sd δ ρ v =
  trans (ip-map-bind Lin-Σ sum ρ (λ _ _ → refl) e (↑ sd) δ v
                     (λ k → ∇-correct e _ _ (ρ , k) v))
        (cong (_ +_) (trans (ΣR-cong t λ k → ⟨⟩-cong (eval-↑ sd ρ k) (λ _ → refl))
                            (sym (⟨⟩-Σʳ (⟦ sd ⟧ ρ) (λ k → D⟦ e ⟧ (ρ , k) v)))))
∇-correct (zero-but i j e) sd δ ρ v =
  trans (∇-correct e _ δ ρ v)
        (cong (_ +_) (zb-adj (⟦ i ⟧ ρ ≟ₚ ⟦ j ⟧ ρ) (⟦ sd ⟧ ρ) (D⟦ e ⟧ ρ v)))
∇-correct (slide {r = r} {u = u} i sp e su) sd δ ρ v =
  trans (∇-correct e _ δ ρ v)
        (cong (_ +_) (trans (ΣR-cong r λ k → *-comm _ _)
          (trans (sym (slide-backslide-adjoint +-isCommutativeMonoid distribˡ zeroʳ
                         (⟦ i ⟧ ρ) sp su (D⟦ e ⟧ ρ v) (⟦ sd ⟧ ρ)))
                 (ΣR-cong u λ k → *-comm _ _))))
∇-correct (backslide i e su sp) sd δ ρ v =
  trans (∇-correct e _ δ ρ v)
        (cong (_ +_) (slide-backslide-adjoint +-isCommutativeMonoid distribˡ zeroʳ
                        (⟦ i ⟧ ρ) sp su (⟦ sd ⟧ ρ) (D⟦ e ⟧ ρ v)))
-- logistic: the seed (sd ⊠ σ) ⊠ (1 − σ), reassociated
∇-correct {s = s} (logistic e) sd δ ρ v =
  trans (∇-correct e _ δ ρ v)
        (cong (_ +_) (ΣR-cong s λ k →
           trans (cong (_* D⟦ e ⟧ ρ v k) (*-assoc _ _ _)) (*-assoc _ _ _)))
-- step and detach: ∇ adds nothing, and ⟨ sd , 0 · De ⟩ = 0
∇-correct {s = s} (un Fn.step e) sd δ ρ v =
  sym (trans (cong (_ +_) (ΣR-zero λ k → trans (cong (⟦ sd ⟧ ρ k *_) (zeroˡ _)) (zeroʳ _)))
             (+-identityʳ _))
∇-correct {s = s} (un Fn.detach e) sd δ ρ v =
  sym (trans (cong (_ +_) (ΣR-zero λ k → trans (cong (⟦ sd ⟧ ρ k *_) (zeroˡ _)) (zeroʳ _)))
             (+-identityʳ _))
-- the other functions: ∇ passes the seed sd ⊠ deriv f e on
∇-correct (un Fn.exp e) sd δ ρ v = trans (∇-correct e _ δ ρ v) (cong (_ +_) (un-adj Fn.exp e sd ρ v))
∇-correct (un Fn.log e) sd δ ρ v = trans (∇-correct e _ δ ρ v) (cong (_ +_) (un-adj Fn.log e sd ρ v))
∇-correct (un Fn.recip e) sd δ ρ v =
  trans (∇-correct e _ δ ρ v) (cong (_ +_) (un-adj Fn.recip e sd ρ v))
∇-correct (un Fn.sqrt e) sd δ ρ v = trans (∇-correct e _ δ ρ v) (cong (_ +_) (un-adj Fn.sqrt e sd ρ v))
∇-correct (un Fn.relu e) sd δ ρ v = trans (∇-correct e _ δ ρ v) (cong (_ +_) (un-adj Fn.relu e sd ρ v))
∇-correct (un Fn.erf e) sd δ ρ v = trans (∇-correct e _ δ ρ v) (cong (_ +_) (un-adj Fn.erf e sd ρ v))
∇-correct (un Fn.derf e) sd δ ρ v = trans (∇-correct e _ δ ρ v) (cong (_ +_) (un-adj Fn.derf e sd ρ v))
∇-correct (e ⊞ e₁) sd δ ρ v =
  trans (∇-correct e sd _ ρ v)
        (trans (cong (_+ ⟨ ⟦ sd ⟧ ρ , D⟦ e ⟧ ρ v ⟩) (∇-correct e₁ sd δ ρ v))
               (trans (swap-tail _ _ _)
                      (cong (_ +_) (sym (⟨⟩-+ʳ (⟦ sd ⟧ ρ) (D⟦ e ⟧ ρ v) (D⟦ e₁ ⟧ ρ v))))))
∇-correct {s = s} (e ⊠ e₁) sd δ ρ v =
  trans (∇-correct e _ _ ρ v)
        (trans (cong (_+ _) (∇-correct e₁ _ δ ρ v))
               (trans (swap-tail _ _ _)
                      (cong (_ +_) (trans
                         (cong₂ _+_ (ΣR-cong s λ k → trans (*-assoc _ _ _)
                                                     (cong (⟦ sd ⟧ ρ k *_) (*-comm _ _)))
                                    (ΣR-cong s λ k → *-assoc _ _ _))
                         (sym (⟨⟩-+ʳ (⟦ sd ⟧ ρ) (λ k → D⟦ e ⟧ ρ v k * ⟦ e₁ ⟧ ρ k)
                                                (λ k → ⟦ e ⟧ ρ k * D⟦ e₁ ⟧ ρ v k)))))))
-- max: the seeds sd ⊠ st and sd ⊠ (1 − st), reassociated
∇-correct {s = s} (e ⊔ e₁) sd δ ρ v =
  trans (∇-correct e _ _ ρ v)
        (trans (cong (_+ _) (∇-correct e₁ _ δ ρ v))
               (trans (swap-tail _ _ _)
                      (cong (_ +_) (trans
                         (cong₂ _+_ (ΣR-cong s λ k → *-assoc _ _ _) (ΣR-cong s λ k → *-assoc _ _ _))
                         (sym (⟨⟩-+ʳ (⟦ sd ⟧ ρ)
                                (λ k → max-sel (⟦ e ⟧ ρ k) (⟦ e₁ ⟧ ρ k) * D⟦ e ⟧ ρ v k)
                                (λ k → (1# + - max-sel (⟦ e ⟧ ρ k) (⟦ e₁ ⟧ ρ k)) * D⟦ e₁ ⟧ ρ v k)))))))
∇-correct {s = s} (scaledown n e) sd δ ρ v =
  trans (∇-correct e _ δ ρ v)
        (cong (_ +_) (ΣR-cong s λ k → scaledown-* n _ _))
∇-correct {s = s} (minus e) sd δ ρ v =
  trans (∇-correct e _ δ ρ v)
        (cong (_ +_) (ΣR-cong s λ k → trans (-‿*-distribˡ _ _) (sym (-‿*-distribʳ _ _))))
∇-correct (ix-minus i j sp su e) sd δ ρ v =
  trans (ip-map-bind (Lin-at d) (ix-minus i j sp su) ρ (λ e′ l → at-sem d (λ k → ⟦ e′ ⟧ (ρ , k)) l)
                     e (↑ sd) δ v (λ k → ∇-correct e _ _ (ρ , k) v))
        (cong (_ +_) (at-adj d (⟦ sd ⟧ ρ) (λ k → ⟦ ↑ sd ⟧ (ρ , k)) (λ k → D⟦ e ⟧ (ρ , k) v)
                             (λ k → eval-↑ sd ρ k)))
  where d = (⟦ i ⟧ ρ ⊖ₚ ⟦ j ⟧ ρ) su sp
∇-correct (ix-minusᵣ i j sp su e) sd δ ρ v =
  trans (ip-map-bind (Lin-at d) (ix-minusᵣ i j sp su) ρ (λ e′ l → at-sem d (λ k → ⟦ e′ ⟧ (ρ , k)) l)
                     e (↑ sd) δ v (λ k → ∇-correct e _ _ (ρ , k) v))
        (cong (_ +_) (at-adj d (⟦ sd ⟧ ρ) (λ k → ⟦ ↑ sd ⟧ (ρ , k)) (λ k → D⟦ e ⟧ (ρ , k) v)
                             (λ k → eval-↑ sd ρ k)))
  where d = (⟦ i ⟧ ρ ⊖ᵣₚ ⟦ j ⟧ ρ) su sp

-- From the zero environment: the statement of the paper.
∇₀-correct : (e sd : E Δ (ar s)) (ρ : Env Δ) (v : TEnv Δ)
           → ip Δ (∇₀ e sd) ρ v ≡ ⟨ ⟦ sd ⟧ ρ , D⟦ e ⟧ ρ v ⟩
∇₀-correct {Δ = Δ} e sd ρ v =
  trans (∇-correct e sd (env-zero {Δ}) ρ v)
        (trans (cong (_+ ⟨ ⟦ sd ⟧ ρ , D⟦ e ⟧ ρ v ⟩) (ip-zero Δ ρ v)) (+-identityˡ _))
