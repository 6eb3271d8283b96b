{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- The optimiser is sound: ⟦ opt e ⟧ ρ is ⟦ e ⟧ ρ at every position, for
-- every e and ρ, over any scalars with Laws (and so is opt*).
--
-- This module does the case analysis of `opt`; the rules' own
-- equations are proved in Spec.Proofs.Opt.Sel (selections),
-- Spec.Proofs.Opt.Sum (sums) and Spec.Proofs.Opt.Fold (constant
-- folding).  Because every case of opt first optimises its children
-- and then inspects the result's head constructor, each case here
-- splits on that constructor too (`with opt e | opt-sound e`), and the
-- unrewritten heads fall through to a congruence lemma.  The clauses
-- are regular enough to be generated (Spec/Proofs/Opt/gen/gen_opt.py,
-- spliced in by Spec/Proofs/Opt/gen/regen.py); each line is one rule.
--
-- The soundness of `sum-zb` (the collapse of a sum of a zero-but) is a
-- parameter of this module: Spec.Proofs.Opt supplies it.
------------------------------------------------------------------------
open import Spec.Scalar using (Scalar)
open import Spec.Scalar.Laws using (Laws)
open import Spec.Lang.Syntax
import Spec.Lang.Eval as Ev
open import Spec.Lang.Opt using (sum-zb)
open import Relation.Binary.PropositionalEquality using (_≡_)

module Spec.Proofs.Opt.Main
  (𝕊 : Scalar) (laws : Laws 𝕊)
  (sum-zb-sound : ∀ {Γ s t p} (i j : E (Γ ▹ ix s) (ix t)) (a : E (Γ ▹ ix s) (ar p))
                    (ρ : Ev.Env 𝕊 Γ)
                → ∀ l → Ev.⟦_⟧ 𝕊 (sum-zb i j a) ρ l ≡ Ev.⟦_⟧ 𝕊 (sum (zero-but i j a)) ρ l)
  where

open import Data.Bool using (true; false)
open import Data.Nat as ℕ using (ℕ; suc)
open import Data.Fin as F using (Fin)
open import Data.Product using (∃; _,_)
open import Relation.Nullary using (Dec; yes; no)
open import Relation.Binary.PropositionalEquality hiding (subst)

open import Spec.Array.Base as A using (S; ι; _⊗_; P; Ar; K; _+_≈_; suc_≈_)
open import Spec.Array.Index as Ix using (_⊕ₚ_; _⊖ₚ_; _⊖ᵣₚ_; combine)
import Spec.Array.Slide as Sl
open import Spec.Lang.Subst
open import Spec.Lang.Opt using (opt; opt*; same; plus-opt; mul-opt)
open import Spec.Lang.Eval 𝕊
open import Spec.Proofs.Val 𝕊
open import Spec.Proofs.Opt.Sel 𝕊 hiding (_≈_)
open import Spec.Proofs.Opt.Sum 𝕊 laws hiding (_≈_; same)
open import Spec.Proofs.Opt.Fold 𝕊 laws hiding (_≈_)

open Scalar 𝕊 using (R; 0#; _+_; _*_; -_; fn) renaming (scaledown to scaledownʳ; max to maxʳ)
open Laws laws using (-‿0#; scaledown-0#)

private
  variable
    Γ : Ctx
    is : IS
    s p q r u t : S

infix 4 _≈_
_≈_ : Ar s R → Ar s R → Set
a ≈ b = ∀ i → a i ≡ b i

------------------------------------------------------------------------
-- Congruences

private
  tr : {a b c : Ar s R} → a ≈ b → b ≈ c → a ≈ c
  tr e₁ e₂ i = trans (e₁ i) (e₂ i)

  sels-cong : (X e : E Γ (ar s)) (i′ i : E Γ (ix s)) (ρ : Env Γ)
            → ⟦ X ⟧ ρ ≈ ⟦ e ⟧ ρ → ⟦ i′ ⟧ ρ ≡ ⟦ i ⟧ ρ → ⟦ sels X i′ ⟧ ρ ≈ ⟦ sels e i ⟧ ρ
  sels-cong X e i′ i ρ hx hi _ = trans (hx _) (cong (⟦ e ⟧ ρ) hi)

  sel-cong : (X e : E Γ (ar (s ⊗ p))) (i′ i : E Γ (ix s)) (ρ : Env Γ)
           → ⟦ X ⟧ ρ ≈ ⟦ e ⟧ ρ → ⟦ i′ ⟧ ρ ≡ ⟦ i ⟧ ρ → ⟦ sel X i′ ⟧ ρ ≈ ⟦ sel e i ⟧ ρ
  sel-cong X e i′ i ρ hx hi j = trans (hx _) (cong (λ y → ⟦ e ⟧ ρ (y ⊗ j)) hi)

  selb-cong : (m : A._*_≈_ s p q) (X e : E Γ (ar q)) (i′ i : E Γ (ix s)) (ρ : Env Γ)
            → ⟦ X ⟧ ρ ≈ ⟦ e ⟧ ρ → ⟦ i′ ⟧ ρ ≡ ⟦ i ⟧ ρ → ⟦ selb m X i′ ⟧ ρ ≈ ⟦ selb m e i ⟧ ρ
  selb-cong m X e i′ i ρ hx hi j = trans (hx _) (cong (λ y → ⟦ e ⟧ ρ (combine m y j)) hi)

  sum-cong′ : (X e : E (Γ ▹ ix t) (ar p)) (ρ : Env Γ)
            → (∀ γ → ⟦ X ⟧ γ ≈ ⟦ e ⟧ γ) → ⟦ sum X ⟧ ρ ≈ ⟦ sum e ⟧ ρ
  sum-cong′ X e ρ h = Σ-cong λ k → h (ρ , k)

  zb-zero : ∀ {x y : P t} (d : Dec (x ≡ y)) {a : Ar p R}
          → (∀ l → 0# ≡ a l) → ∀ l → 0# ≡ if-eq d a l
  zb-zero (yes _) h l = h l
  zb-zero (no  _) h l = refl

  at-zero : ∀ {X : P s → Set} (d : Dec (∃ X)) {f : P s → Ar p R}
          → (∀ k l → 0# ≡ f k l) → ∀ l → 0# ≡ at d f l
  at-zero (yes (k , _)) h l = h k l
  at-zero (no  _)       h l = refl

  backslide-zero : (x : P s) (su : A.suc_≈_ p u) (sp : A._+_≈_ s p r) {a : Ar u R}
                 → (∀ k → 0# ≡ a k) → ∀ l → 0# ≡ Sl.backslide x a su 0# sp l
  backslide-zero x su sp h l with (l ⊖ₚ x) su sp
  ... | yes (k , _) = h k
  ... | no  _       = refl

------------------------------------------------------------------------
-- The theorem

opt-sound : (e : E Γ is) (ρ : Env Γ) → Same is (⟦ opt e ⟧ ρ) (⟦ e ⟧ ρ)
opt-sound (var x) ρ = Same-refl _ (lookup x ρ)
opt-sound zero    ρ = λ _ → refl
opt-sound one     ρ = λ _ → refl

opt-sound (imaps e) ρ with opt e | opt-sound e
... | X@(var _) | h = λ i → h (ρ , i) (ι F.zero)
... | zero | h = λ i → h (ρ , i) (ι F.zero)
... | X@one | h = λ i → h (ρ , i) (ι F.zero)
... | X@(imaps _) | h = λ i → h (ρ , i) (ι F.zero)
... | X@(sels _ _) | h = λ i → h (ρ , i) (ι F.zero)
... | X@(sel _ _) | h = λ i → h (ρ , i) (ι F.zero)
... | X@(imapb _ _) | h = λ i → h (ρ , i) (ι F.zero)
... | X@(selb _ _ _) | h = λ i → h (ρ , i) (ι F.zero)
... | X@(sum _) | h = λ i → h (ρ , i) (ι F.zero)
... | X@(zero-but _ _ _) | h = λ i → h (ρ , i) (ι F.zero)
... | X@(slide _ _ _ _) | h = λ i → h (ρ , i) (ι F.zero)
... | X@(backslide _ _ _ _) | h = λ i → h (ρ , i) (ι F.zero)
... | X@(un _ _) | h = λ i → h (ρ , i) (ι F.zero)
... | X@(bin _ _ _) | h = λ i → h (ρ , i) (ι F.zero)
... | X@(scaledown _ _) | h = λ i → h (ρ , i) (ι F.zero)
... | X@(minus _) | h = λ i → h (ρ , i) (ι F.zero)
... | X@(ix-minus _ _ _ _ _) | h = λ i → h (ρ , i) (ι F.zero)
... | X@(ix-minusᵣ _ _ _ _ _) | h = λ i → h (ρ , i) (ι F.zero)

opt-sound (imap e) ρ with opt e | opt-sound e
... | X@(var _) | h = λ { (i ⊗ j) → h (ρ , i) j }
... | zero | h = λ { (i ⊗ j) → h (ρ , i) j }
... | X@one | h = λ { (i ⊗ j) → h (ρ , i) j }
... | X@(imaps _) | h = λ { (i ⊗ j) → h (ρ , i) j }
... | X@(sels _ _) | h = λ { (i ⊗ j) → h (ρ , i) j }
... | X@(imap _) | h = λ { (i ⊗ j) → h (ρ , i) j }
... | X@(sel _ _) | h = λ { (i ⊗ j) → h (ρ , i) j }
... | X@(imapb _ _) | h = λ { (i ⊗ j) → h (ρ , i) j }
... | X@(selb _ _ _) | h = λ { (i ⊗ j) → h (ρ , i) j }
... | X@(sum _) | h = λ { (i ⊗ j) → h (ρ , i) j }
... | X@(zero-but _ _ _) | h = λ { (i ⊗ j) → h (ρ , i) j }
... | X@(slide _ _ _ _) | h = λ { (i ⊗ j) → h (ρ , i) j }
... | X@(backslide _ _ _ _) | h = λ { (i ⊗ j) → h (ρ , i) j }
... | X@(un _ _) | h = λ { (i ⊗ j) → h (ρ , i) j }
... | X@(bin _ _ _) | h = λ { (i ⊗ j) → h (ρ , i) j }
... | X@(scaledown _ _) | h = λ { (i ⊗ j) → h (ρ , i) j }
... | X@(minus _) | h = λ { (i ⊗ j) → h (ρ , i) j }
... | X@(ix-minus _ _ _ _ _) | h = λ { (i ⊗ j) → h (ρ , i) j }
... | X@(ix-minusᵣ _ _ _ _ _) | h = λ { (i ⊗ j) → h (ρ , i) j }

opt-sound (imapb m e) ρ with opt e | opt-sound e
... | X@(var _) | h = tr (imapb-η m X ρ) (λ k → h (ρ , Ix.div m k) (Ix.mod m k))
... | zero | h = λ k → h (ρ , Ix.div m k) (Ix.mod m k)
... | X@one | h = tr (imapb-η m X ρ) (λ k → h (ρ , Ix.div m k) (Ix.mod m k))
... | X@(imaps _) | h = tr (imapb-η m X ρ) (λ k → h (ρ , Ix.div m k) (Ix.mod m k))
... | X@(sels _ _) | h = tr (imapb-η m X ρ) (λ k → h (ρ , Ix.div m k) (Ix.mod m k))
... | X@(imap _) | h = tr (imapb-η m X ρ) (λ k → h (ρ , Ix.div m k) (Ix.mod m k))
... | X@(sel _ _) | h = tr (imapb-η m X ρ) (λ k → h (ρ , Ix.div m k) (Ix.mod m k))
... | X@(imapb _ _) | h = tr (imapb-η m X ρ) (λ k → h (ρ , Ix.div m k) (Ix.mod m k))
... | X@(selb _ _ _) | h = tr (imapb-η m X ρ) (λ k → h (ρ , Ix.div m k) (Ix.mod m k))
... | X@(sum _) | h = tr (imapb-η m X ρ) (λ k → h (ρ , Ix.div m k) (Ix.mod m k))
... | X@(zero-but _ _ _) | h = tr (imapb-η m X ρ) (λ k → h (ρ , Ix.div m k) (Ix.mod m k))
... | X@(slide _ _ _ _) | h = tr (imapb-η m X ρ) (λ k → h (ρ , Ix.div m k) (Ix.mod m k))
... | X@(backslide _ _ _ _) | h = tr (imapb-η m X ρ) (λ k → h (ρ , Ix.div m k) (Ix.mod m k))
... | X@(un _ _) | h = tr (imapb-η m X ρ) (λ k → h (ρ , Ix.div m k) (Ix.mod m k))
... | X@(bin _ _ _) | h = tr (imapb-η m X ρ) (λ k → h (ρ , Ix.div m k) (Ix.mod m k))
... | X@(scaledown _ _) | h = tr (imapb-η m X ρ) (λ k → h (ρ , Ix.div m k) (Ix.mod m k))
... | X@(minus _) | h = tr (imapb-η m X ρ) (λ k → h (ρ , Ix.div m k) (Ix.mod m k))
... | X@(ix-minus _ _ _ _ _) | h = tr (imapb-η m X ρ) (λ k → h (ρ , Ix.div m k) (Ix.mod m k))
... | X@(ix-minusᵣ _ _ _ _ _) | h = tr (imapb-η m X ρ) (λ k → h (ρ , Ix.div m k) (Ix.mod m k))

opt-sound (sels e i) ρ with opt e | opt-sound e | opt i | opt-sound i
... | zero | h | i′ | hi = λ _ → h ρ (⟦ i ⟧ ρ)
... | one  | h | i′ | hi = λ _ → h ρ (⟦ i ⟧ ρ)
... | X@(var _) | h | i′ | hi = (sels-cong X e i′ i ρ (h ρ) (hi ρ))
... | X@(imaps a) | h | i′ | hi = tr (sels-imaps a i′ ρ) (sels-cong X e i′ i ρ (h ρ) (hi ρ))
... | X@(sels _ _) | h | i′ | hi = (sels-cong X e i′ i ρ (h ρ) (hi ρ))
... | X@(imap _) | h | i′ | hi = (sels-cong X e i′ i ρ (h ρ) (hi ρ))
... | X@(sel _ _) | h | i′ | hi = (sels-cong X e i′ i ρ (h ρ) (hi ρ))
... | X@(imapb _ _) | h | i′ | hi = (sels-cong X e i′ i ρ (h ρ) (hi ρ))
... | X@(selb _ _ _) | h | i′ | hi = (sels-cong X e i′ i ρ (h ρ) (hi ρ))
... | X@(sum a) | h | i′ | hi = tr (sels-sum a i′ ρ) (sels-cong X e i′ i ρ (h ρ) (hi ρ))
... | X@(zero-but j k a) | h | i′ | hi = tr (sels-zero-but j k a i′ ρ) (sels-cong X e i′ i ρ (h ρ) (hi ρ))
... | X@(slide _ _ _ _) | h | i′ | hi = (sels-cong X e i′ i ρ (h ρ) (hi ρ))
... | X@(backslide _ _ _ _) | h | i′ | hi = (sels-cong X e i′ i ρ (h ρ) (hi ρ))
... | X@(un _ _) | h | i′ | hi = (sels-cong X e i′ i ρ (h ρ) (hi ρ))
... | X@(bin _ _ _) | h | i′ | hi = (sels-cong X e i′ i ρ (h ρ) (hi ρ))
... | X@(scaledown _ _) | h | i′ | hi = (sels-cong X e i′ i ρ (h ρ) (hi ρ))
... | X@(minus _) | h | i′ | hi = (sels-cong X e i′ i ρ (h ρ) (hi ρ))
... | X@(ix-minus j k sp su a) | h | i′ | hi = tr (sels-ix-minus j k sp su a i′ ρ) (sels-cong X e i′ i ρ (h ρ) (hi ρ))
... | X@(ix-minusᵣ j k sp su a) | h | i′ | hi = tr (sels-ix-minusᵣ j k sp su a i′ ρ) (sels-cong X e i′ i ρ (h ρ) (hi ρ))

opt-sound (sel e i) ρ with opt e | opt-sound e | opt i | opt-sound i
... | zero | h | i′ | hi = λ j → h ρ (⟦ i ⟧ ρ ⊗ j)
... | one  | h | i′ | hi = λ j → h ρ (⟦ i ⟧ ρ ⊗ j)
... | X@(var _) | h | i′ | hi = (sel-cong X e i′ i ρ (h ρ) (hi ρ))
... | X@(imaps _) | h | i′ | hi = (sel-cong X e i′ i ρ (h ρ) (hi ρ))
... | X@(imap a) | h | i′ | hi = tr (sel-imap a i′ ρ) (sel-cong X e i′ i ρ (h ρ) (hi ρ))
... | X@(sel _ _) | h | i′ | hi = (sel-cong X e i′ i ρ (h ρ) (hi ρ))
... | X@(imapb _ _) | h | i′ | hi = (sel-cong X e i′ i ρ (h ρ) (hi ρ))
... | X@(selb _ _ _) | h | i′ | hi = (sel-cong X e i′ i ρ (h ρ) (hi ρ))
... | X@(sum a) | h | i′ | hi = tr (sel-sum a i′ ρ) (sel-cong X e i′ i ρ (h ρ) (hi ρ))
... | X@(zero-but j k a) | h | i′ | hi = tr (sel-zero-but j k a i′ ρ) (sel-cong X e i′ i ρ (h ρ) (hi ρ))
... | X@(slide _ _ _ _) | h | i′ | hi = (sel-cong X e i′ i ρ (h ρ) (hi ρ))
... | X@(backslide _ _ _ _) | h | i′ | hi = (sel-cong X e i′ i ρ (h ρ) (hi ρ))
... | X@(un _ _) | h | i′ | hi = (sel-cong X e i′ i ρ (h ρ) (hi ρ))
... | X@(bin _ _ _) | h | i′ | hi = (sel-cong X e i′ i ρ (h ρ) (hi ρ))
... | X@(scaledown _ _) | h | i′ | hi = (sel-cong X e i′ i ρ (h ρ) (hi ρ))
... | X@(minus _) | h | i′ | hi = (sel-cong X e i′ i ρ (h ρ) (hi ρ))
... | X@(ix-minus j k sp su a) | h | i′ | hi = tr (sel-ix-minus j k sp su a i′ ρ) (sel-cong X e i′ i ρ (h ρ) (hi ρ))
... | X@(ix-minusᵣ j k sp su a) | h | i′ | hi = tr (sel-ix-minusᵣ j k sp su a i′ ρ) (sel-cong X e i′ i ρ (h ρ) (hi ρ))

opt-sound (selb m e i) ρ with opt e | opt-sound e | opt i | opt-sound i
... | zero | h | i′ | hi = λ j → h ρ (combine m (⟦ i ⟧ ρ) j)
... | one  | h | i′ | hi = λ j → h ρ (combine m (⟦ i ⟧ ρ) j)
... | X@(var _) | h | i′ | hi = (selb-cong m X e i′ i ρ (h ρ) (hi ρ))
... | X@(imaps _) | h | i′ | hi = (selb-cong m X e i′ i ρ (h ρ) (hi ρ))
... | X@(sels _ _) | h | i′ | hi = (selb-cong m X e i′ i ρ (h ρ) (hi ρ))
... | X@(imap _) | h | i′ | hi = (selb-cong m X e i′ i ρ (h ρ) (hi ρ))
... | X@(sel _ _) | h | i′ | hi = (selb-cong m X e i′ i ρ (h ρ) (hi ρ))
... | X@(imapb _ _) | h | i′ | hi = (selb-cong m X e i′ i ρ (h ρ) (hi ρ))
... | X@(selb _ _ _) | h | i′ | hi = (selb-cong m X e i′ i ρ (h ρ) (hi ρ))
... | X@(sum a) | h | i′ | hi = tr (selb-sum m a i′ ρ) (selb-cong m X e i′ i ρ (h ρ) (hi ρ))
... | X@(zero-but j k a) | h | i′ | hi = tr (selb-zero-but m j k a i′ ρ) (selb-cong m X e i′ i ρ (h ρ) (hi ρ))
... | X@(slide _ _ _ _) | h | i′ | hi = (selb-cong m X e i′ i ρ (h ρ) (hi ρ))
... | X@(backslide _ _ _ _) | h | i′ | hi = (selb-cong m X e i′ i ρ (h ρ) (hi ρ))
... | X@(un _ _) | h | i′ | hi = (selb-cong m X e i′ i ρ (h ρ) (hi ρ))
... | X@(bin _ _ _) | h | i′ | hi = (selb-cong m X e i′ i ρ (h ρ) (hi ρ))
... | X@(scaledown _ _) | h | i′ | hi = (selb-cong m X e i′ i ρ (h ρ) (hi ρ))
... | X@(minus _) | h | i′ | hi = (selb-cong m X e i′ i ρ (h ρ) (hi ρ))
... | X@(ix-minus j k sp su a) | h | i′ | hi = tr (selb-ix-minus m j k sp su a i′ ρ) (selb-cong m X e i′ i ρ (h ρ) (hi ρ))
... | X@(ix-minusᵣ j k sp su a) | h | i′ | hi = tr (selb-ix-minusᵣ m j k sp su a i′ ρ) (selb-cong m X e i′ i ρ (h ρ) (hi ρ))

opt-sound (sum {s = t} e) ρ with opt e | opt-sound e
... | X@(var _) | h = (sum-cong′ X e ρ h)
... | X@zero | h = tr (sum-zero-sound {s = t} ρ) (sum-cong′ X e ρ h)
... | X@one | h = (sum-cong′ X e ρ h)
... | X@(imaps a) | h = tr (sum-imaps a ρ) (sum-cong′ X e ρ h)
... | X@(sels _ _) | h = (sum-cong′ X e ρ h)
... | X@(imap a) | h = tr (sum-imap a ρ) (sum-cong′ X e ρ h)
... | X@(sel _ _) | h = (sum-cong′ X e ρ h)
... | X@(imapb _ _) | h = (sum-cong′ X e ρ h)
... | X@(selb _ _ _) | h = (sum-cong′ X e ρ h)
... | X@(sum _) | h = (sum-cong′ X e ρ h)
... | X@(zero-but i j a) | h = tr (sum-zb-sound i j a ρ) (sum-cong′ X e ρ h)
... | X@(slide _ _ _ _) | h = (sum-cong′ X e ρ h)
... | X@(backslide _ _ _ _) | h = (sum-cong′ X e ρ h)
... | X@(un _ _) | h = (sum-cong′ X e ρ h)
... | X@(scaledown _ _) | h = (sum-cong′ X e ρ h)
... | X@(minus a) | h = tr (sum-minus a ρ) (sum-cong′ X e ρ h)
... | X@(ix-minus _ _ _ _ _) | h = (sum-cong′ X e ρ h)
... | X@(ix-minusᵣ _ _ _ _ _) | h = (sum-cong′ X e ρ h)
... | X@(bin plus a b) | h = tr (sum-plus a b ρ) (sum-cong′ X e ρ h)
... | X@(bin mul _ _) | h = (sum-cong′ X e ρ h)
... | X@(bin max _ _) | h = (sum-cong′ X e ρ h)

opt-sound (zero-but i j e) ρ with opt e | opt-sound e
... | X@(var _) | h = zero-but-cong (opt-sound i ρ) (opt-sound j ρ) (h ρ)
... | zero | h = zb-zero (⟦ i ⟧ ρ ≟ₚ ⟦ j ⟧ ρ) (h ρ)
... | X@one | h = zero-but-cong (opt-sound i ρ) (opt-sound j ρ) (h ρ)
... | X@(imaps _) | h = zero-but-cong (opt-sound i ρ) (opt-sound j ρ) (h ρ)
... | X@(sels _ _) | h = zero-but-cong (opt-sound i ρ) (opt-sound j ρ) (h ρ)
... | X@(imap _) | h = zero-but-cong (opt-sound i ρ) (opt-sound j ρ) (h ρ)
... | X@(sel _ _) | h = zero-but-cong (opt-sound i ρ) (opt-sound j ρ) (h ρ)
... | X@(imapb _ _) | h = zero-but-cong (opt-sound i ρ) (opt-sound j ρ) (h ρ)
... | X@(selb _ _ _) | h = zero-but-cong (opt-sound i ρ) (opt-sound j ρ) (h ρ)
... | X@(sum _) | h = zero-but-cong (opt-sound i ρ) (opt-sound j ρ) (h ρ)
... | X@(zero-but _ _ _) | h = zero-but-cong (opt-sound i ρ) (opt-sound j ρ) (h ρ)
... | X@(slide _ _ _ _) | h = zero-but-cong (opt-sound i ρ) (opt-sound j ρ) (h ρ)
... | X@(backslide _ _ _ _) | h = zero-but-cong (opt-sound i ρ) (opt-sound j ρ) (h ρ)
... | X@(un _ _) | h = zero-but-cong (opt-sound i ρ) (opt-sound j ρ) (h ρ)
... | X@(bin _ _ _) | h = zero-but-cong (opt-sound i ρ) (opt-sound j ρ) (h ρ)
... | X@(scaledown _ _) | h = zero-but-cong (opt-sound i ρ) (opt-sound j ρ) (h ρ)
... | X@(minus _) | h = zero-but-cong (opt-sound i ρ) (opt-sound j ρ) (h ρ)
... | X@(ix-minus _ _ _ _ _) | h = zero-but-cong (opt-sound i ρ) (opt-sound j ρ) (h ρ)
... | X@(ix-minusᵣ _ _ _ _ _) | h = zero-but-cong (opt-sound i ρ) (opt-sound j ρ) (h ρ)

opt-sound (slide i sp e su) ρ with opt i | opt-sound i | opt e | opt-sound e
... | i′ | hi | X@(var _) | h = tr (slide-η i′ X sp su ρ) (λ j → trans (h ρ _) (cong (λ y → ⟦ e ⟧ ρ ((y ⊕ₚ j) su sp)) (hi ρ)))
... | i′ | hi | zero | h = λ j → h ρ _
... | i′ | hi | X@one | h = tr (slide-η i′ X sp su ρ) (λ j → trans (h ρ _) (cong (λ y → ⟦ e ⟧ ρ ((y ⊕ₚ j) su sp)) (hi ρ)))
... | i′ | hi | X@(imaps _) | h = tr (slide-η i′ X sp su ρ) (λ j → trans (h ρ _) (cong (λ y → ⟦ e ⟧ ρ ((y ⊕ₚ j) su sp)) (hi ρ)))
... | i′ | hi | X@(sels _ _) | h = tr (slide-η i′ X sp su ρ) (λ j → trans (h ρ _) (cong (λ y → ⟦ e ⟧ ρ ((y ⊕ₚ j) su sp)) (hi ρ)))
... | i′ | hi | X@(imap _) | h = tr (slide-η i′ X sp su ρ) (λ j → trans (h ρ _) (cong (λ y → ⟦ e ⟧ ρ ((y ⊕ₚ j) su sp)) (hi ρ)))
... | i′ | hi | X@(sel _ _) | h = tr (slide-η i′ X sp su ρ) (λ j → trans (h ρ _) (cong (λ y → ⟦ e ⟧ ρ ((y ⊕ₚ j) su sp)) (hi ρ)))
... | i′ | hi | X@(imapb _ _) | h = tr (slide-η i′ X sp su ρ) (λ j → trans (h ρ _) (cong (λ y → ⟦ e ⟧ ρ ((y ⊕ₚ j) su sp)) (hi ρ)))
... | i′ | hi | X@(selb _ _ _) | h = tr (slide-η i′ X sp su ρ) (λ j → trans (h ρ _) (cong (λ y → ⟦ e ⟧ ρ ((y ⊕ₚ j) su sp)) (hi ρ)))
... | i′ | hi | X@(sum _) | h = tr (slide-η i′ X sp su ρ) (λ j → trans (h ρ _) (cong (λ y → ⟦ e ⟧ ρ ((y ⊕ₚ j) su sp)) (hi ρ)))
... | i′ | hi | X@(zero-but _ _ _) | h = tr (slide-η i′ X sp su ρ) (λ j → trans (h ρ _) (cong (λ y → ⟦ e ⟧ ρ ((y ⊕ₚ j) su sp)) (hi ρ)))
... | i′ | hi | X@(slide _ _ _ _) | h = tr (slide-η i′ X sp su ρ) (λ j → trans (h ρ _) (cong (λ y → ⟦ e ⟧ ρ ((y ⊕ₚ j) su sp)) (hi ρ)))
... | i′ | hi | X@(backslide _ _ _ _) | h = tr (slide-η i′ X sp su ρ) (λ j → trans (h ρ _) (cong (λ y → ⟦ e ⟧ ρ ((y ⊕ₚ j) su sp)) (hi ρ)))
... | i′ | hi | X@(un _ _) | h = tr (slide-η i′ X sp su ρ) (λ j → trans (h ρ _) (cong (λ y → ⟦ e ⟧ ρ ((y ⊕ₚ j) su sp)) (hi ρ)))
... | i′ | hi | X@(bin _ _ _) | h = tr (slide-η i′ X sp su ρ) (λ j → trans (h ρ _) (cong (λ y → ⟦ e ⟧ ρ ((y ⊕ₚ j) su sp)) (hi ρ)))
... | i′ | hi | X@(scaledown _ _) | h = tr (slide-η i′ X sp su ρ) (λ j → trans (h ρ _) (cong (λ y → ⟦ e ⟧ ρ ((y ⊕ₚ j) su sp)) (hi ρ)))
... | i′ | hi | X@(minus _) | h = tr (slide-η i′ X sp su ρ) (λ j → trans (h ρ _) (cong (λ y → ⟦ e ⟧ ρ ((y ⊕ₚ j) su sp)) (hi ρ)))
... | i′ | hi | X@(ix-minus _ _ _ _ _) | h = tr (slide-η i′ X sp su ρ) (λ j → trans (h ρ _) (cong (λ y → ⟦ e ⟧ ρ ((y ⊕ₚ j) su sp)) (hi ρ)))
... | i′ | hi | X@(ix-minusᵣ _ _ _ _ _) | h = tr (slide-η i′ X sp su ρ) (λ j → trans (h ρ _) (cong (λ y → ⟦ e ⟧ ρ ((y ⊕ₚ j) su sp)) (hi ρ)))

opt-sound (backslide i e su sp) ρ with opt i | opt-sound i | opt e | opt-sound e
... | i′ | hi | X@(var _) | h = tr (backslide-η i′ X su sp ρ) (backslide-cong su sp (hi ρ) (h ρ))
... | i′ | hi | zero | h = backslide-zero (⟦ i ⟧ ρ) su sp (h ρ)
... | i′ | hi | X@one | h = tr (backslide-η i′ X su sp ρ) (backslide-cong su sp (hi ρ) (h ρ))
... | i′ | hi | X@(imaps _) | h = tr (backslide-η i′ X su sp ρ) (backslide-cong su sp (hi ρ) (h ρ))
... | i′ | hi | X@(sels _ _) | h = tr (backslide-η i′ X su sp ρ) (backslide-cong su sp (hi ρ) (h ρ))
... | i′ | hi | X@(imap _) | h = tr (backslide-η i′ X su sp ρ) (backslide-cong su sp (hi ρ) (h ρ))
... | i′ | hi | X@(sel _ _) | h = tr (backslide-η i′ X su sp ρ) (backslide-cong su sp (hi ρ) (h ρ))
... | i′ | hi | X@(imapb _ _) | h = tr (backslide-η i′ X su sp ρ) (backslide-cong su sp (hi ρ) (h ρ))
... | i′ | hi | X@(selb _ _ _) | h = tr (backslide-η i′ X su sp ρ) (backslide-cong su sp (hi ρ) (h ρ))
... | i′ | hi | X@(sum _) | h = tr (backslide-η i′ X su sp ρ) (backslide-cong su sp (hi ρ) (h ρ))
... | i′ | hi | X@(zero-but _ _ _) | h = tr (backslide-η i′ X su sp ρ) (backslide-cong su sp (hi ρ) (h ρ))
... | i′ | hi | X@(slide _ _ _ _) | h = tr (backslide-η i′ X su sp ρ) (backslide-cong su sp (hi ρ) (h ρ))
... | i′ | hi | X@(backslide _ _ _ _) | h = tr (backslide-η i′ X su sp ρ) (backslide-cong su sp (hi ρ) (h ρ))
... | i′ | hi | X@(un _ _) | h = tr (backslide-η i′ X su sp ρ) (backslide-cong su sp (hi ρ) (h ρ))
... | i′ | hi | X@(bin _ _ _) | h = tr (backslide-η i′ X su sp ρ) (backslide-cong su sp (hi ρ) (h ρ))
... | i′ | hi | X@(scaledown _ _) | h = tr (backslide-η i′ X su sp ρ) (backslide-cong su sp (hi ρ) (h ρ))
... | i′ | hi | X@(minus _) | h = tr (backslide-η i′ X su sp ρ) (backslide-cong su sp (hi ρ) (h ρ))
... | i′ | hi | X@(ix-minus _ _ _ _ _) | h = tr (backslide-η i′ X su sp ρ) (backslide-cong su sp (hi ρ) (h ρ))
... | i′ | hi | X@(ix-minusᵣ _ _ _ _ _) | h = tr (backslide-η i′ X su sp ρ) (backslide-cong su sp (hi ρ) (h ρ))

opt-sound (un f e) ρ = λ l → cong (fn f) (opt-sound e ρ l)
opt-sound (bin plus e e₁) ρ =
  tr (plus-opt-sound (opt e) (opt e₁) ρ) (λ l → cong₂ _+_ (opt-sound e ρ l) (opt-sound e₁ ρ l))
opt-sound (bin mul e e₁) ρ =
  tr (mul-opt-sound (opt e) (opt e₁) ρ) (λ l → cong₂ _*_ (opt-sound e ρ l) (opt-sound e₁ ρ l))
opt-sound (bin max e e₁) ρ = λ l → cong₂ maxʳ (opt-sound e ρ l) (opt-sound e₁ ρ l)

opt-sound (scaledown n e) ρ with opt e | opt-sound e
... | X@(var _) | h = λ l → cong (scaledownʳ n) (h ρ l)
... | zero | h = λ l → trans (sym (scaledown-0# n)) (cong (scaledownʳ n) (h ρ l))
... | X@one | h = λ l → cong (scaledownʳ n) (h ρ l)
... | X@(imaps _) | h = λ l → cong (scaledownʳ n) (h ρ l)
... | X@(sels _ _) | h = λ l → cong (scaledownʳ n) (h ρ l)
... | X@(imap _) | h = λ l → cong (scaledownʳ n) (h ρ l)
... | X@(sel _ _) | h = λ l → cong (scaledownʳ n) (h ρ l)
... | X@(imapb _ _) | h = λ l → cong (scaledownʳ n) (h ρ l)
... | X@(selb _ _ _) | h = λ l → cong (scaledownʳ n) (h ρ l)
... | sum a | h = tr (scaledown-sum n a ρ) (λ l → cong (scaledownʳ n) (h ρ l))
... | X@(zero-but _ _ _) | h = λ l → cong (scaledownʳ n) (h ρ l)
... | X@(slide _ _ _ _) | h = λ l → cong (scaledownʳ n) (h ρ l)
... | X@(backslide _ _ _ _) | h = λ l → cong (scaledownʳ n) (h ρ l)
... | X@(un _ _) | h = λ l → cong (scaledownʳ n) (h ρ l)
... | X@(bin _ _ _) | h = λ l → cong (scaledownʳ n) (h ρ l)
... | X@(scaledown _ _) | h = λ l → cong (scaledownʳ n) (h ρ l)
... | X@(minus _) | h = λ l → cong (scaledownʳ n) (h ρ l)
... | X@(ix-minus _ _ _ _ _) | h = λ l → cong (scaledownʳ n) (h ρ l)
... | X@(ix-minusᵣ _ _ _ _ _) | h = λ l → cong (scaledownʳ n) (h ρ l)

opt-sound (minus e) ρ with opt e | opt-sound e
... | X@(var _) | h = λ l → cong -_ (h ρ l)
... | zero | h = λ l → trans (sym -‿0#) (cong -_ (h ρ l))
... | X@one | h = λ l → cong -_ (h ρ l)
... | X@(imaps _) | h = λ l → cong -_ (h ρ l)
... | X@(sels _ _) | h = λ l → cong -_ (h ρ l)
... | X@(imap _) | h = λ l → cong -_ (h ρ l)
... | X@(sel _ _) | h = λ l → cong -_ (h ρ l)
... | X@(imapb _ _) | h = λ l → cong -_ (h ρ l)
... | X@(selb _ _ _) | h = λ l → cong -_ (h ρ l)
... | X@(sum _) | h = λ l → cong -_ (h ρ l)
... | X@(zero-but _ _ _) | h = λ l → cong -_ (h ρ l)
... | X@(slide _ _ _ _) | h = λ l → cong -_ (h ρ l)
... | X@(backslide _ _ _ _) | h = λ l → cong -_ (h ρ l)
... | X@(un _ _) | h = λ l → cong -_ (h ρ l)
... | X@(bin _ _ _) | h = λ l → cong -_ (h ρ l)
... | X@(scaledown _ _) | h = λ l → cong -_ (h ρ l)
... | minus a | h = λ l → trans (sym (-‿involutive _)) (cong -_ (h ρ l))
... | X@(ix-minus _ _ _ _ _) | h = λ l → cong -_ (h ρ l)
... | X@(ix-minusᵣ _ _ _ _ _) | h = λ l → cong -_ (h ρ l)

opt-sound (ix-const i) ρ = refl
opt-sound (div m i) ρ = cong (Ix.div m) (opt-sound i ρ)
opt-sound (mod m i) ρ = cong (Ix.mod m) (opt-sound i ρ)
opt-sound (ix-plus i j su sp) ρ = cong₂ (λ a b → (a ⊕ₚ b) su sp) (opt-sound i ρ) (opt-sound j ρ)
opt-sound (argmax w e) ρ = argmax-sem-cong w λ i → opt-sound e (ρ , i) (ι F.zero)

opt-sound (ix-minus i j sp su e) ρ with opt e | opt-sound e
... | X@(var _) | h = ix-minus-cong sp su (opt-sound i ρ) (opt-sound j ρ) (λ k → h (ρ , k))
... | zero | h = at-zero ((⟦ i ⟧ ρ ⊖ₚ ⟦ j ⟧ ρ) su sp) (λ k → h (ρ , k))
... | X@one | h = ix-minus-cong sp su (opt-sound i ρ) (opt-sound j ρ) (λ k → h (ρ , k))
... | X@(imaps _) | h = ix-minus-cong sp su (opt-sound i ρ) (opt-sound j ρ) (λ k → h (ρ , k))
... | X@(sels _ _) | h = ix-minus-cong sp su (opt-sound i ρ) (opt-sound j ρ) (λ k → h (ρ , k))
... | X@(imap _) | h = ix-minus-cong sp su (opt-sound i ρ) (opt-sound j ρ) (λ k → h (ρ , k))
... | X@(sel _ _) | h = ix-minus-cong sp su (opt-sound i ρ) (opt-sound j ρ) (λ k → h (ρ , k))
... | X@(imapb _ _) | h = ix-minus-cong sp su (opt-sound i ρ) (opt-sound j ρ) (λ k → h (ρ , k))
... | X@(selb _ _ _) | h = ix-minus-cong sp su (opt-sound i ρ) (opt-sound j ρ) (λ k → h (ρ , k))
... | X@(sum _) | h = ix-minus-cong sp su (opt-sound i ρ) (opt-sound j ρ) (λ k → h (ρ , k))
... | X@(zero-but _ _ _) | h = ix-minus-cong sp su (opt-sound i ρ) (opt-sound j ρ) (λ k → h (ρ , k))
... | X@(slide _ _ _ _) | h = ix-minus-cong sp su (opt-sound i ρ) (opt-sound j ρ) (λ k → h (ρ , k))
... | X@(backslide _ _ _ _) | h = ix-minus-cong sp su (opt-sound i ρ) (opt-sound j ρ) (λ k → h (ρ , k))
... | X@(un _ _) | h = ix-minus-cong sp su (opt-sound i ρ) (opt-sound j ρ) (λ k → h (ρ , k))
... | X@(bin _ _ _) | h = ix-minus-cong sp su (opt-sound i ρ) (opt-sound j ρ) (λ k → h (ρ , k))
... | X@(scaledown _ _) | h = ix-minus-cong sp su (opt-sound i ρ) (opt-sound j ρ) (λ k → h (ρ , k))
... | X@(minus _) | h = ix-minus-cong sp su (opt-sound i ρ) (opt-sound j ρ) (λ k → h (ρ , k))
... | X@(ix-minus _ _ _ _ _) | h = ix-minus-cong sp su (opt-sound i ρ) (opt-sound j ρ) (λ k → h (ρ , k))
... | X@(ix-minusᵣ _ _ _ _ _) | h = ix-minus-cong sp su (opt-sound i ρ) (opt-sound j ρ) (λ k → h (ρ , k))

opt-sound (ix-minusᵣ i j sp su e) ρ with opt e | opt-sound e
... | X@(var _) | h = ix-minusᵣ-cong sp su (opt-sound i ρ) (opt-sound j ρ) (λ k → h (ρ , k))
... | zero | h = at-zero ((⟦ i ⟧ ρ ⊖ᵣₚ ⟦ j ⟧ ρ) su sp) (λ k → h (ρ , k))
... | X@one | h = ix-minusᵣ-cong sp su (opt-sound i ρ) (opt-sound j ρ) (λ k → h (ρ , k))
... | X@(imaps _) | h = ix-minusᵣ-cong sp su (opt-sound i ρ) (opt-sound j ρ) (λ k → h (ρ , k))
... | X@(sels _ _) | h = ix-minusᵣ-cong sp su (opt-sound i ρ) (opt-sound j ρ) (λ k → h (ρ , k))
... | X@(imap _) | h = ix-minusᵣ-cong sp su (opt-sound i ρ) (opt-sound j ρ) (λ k → h (ρ , k))
... | X@(sel _ _) | h = ix-minusᵣ-cong sp su (opt-sound i ρ) (opt-sound j ρ) (λ k → h (ρ , k))
... | X@(imapb _ _) | h = ix-minusᵣ-cong sp su (opt-sound i ρ) (opt-sound j ρ) (λ k → h (ρ , k))
... | X@(selb _ _ _) | h = ix-minusᵣ-cong sp su (opt-sound i ρ) (opt-sound j ρ) (λ k → h (ρ , k))
... | X@(sum _) | h = ix-minusᵣ-cong sp su (opt-sound i ρ) (opt-sound j ρ) (λ k → h (ρ , k))
... | X@(zero-but _ _ _) | h = ix-minusᵣ-cong sp su (opt-sound i ρ) (opt-sound j ρ) (λ k → h (ρ , k))
... | X@(slide _ _ _ _) | h = ix-minusᵣ-cong sp su (opt-sound i ρ) (opt-sound j ρ) (λ k → h (ρ , k))
... | X@(backslide _ _ _ _) | h = ix-minusᵣ-cong sp su (opt-sound i ρ) (opt-sound j ρ) (λ k → h (ρ , k))
... | X@(un _ _) | h = ix-minusᵣ-cong sp su (opt-sound i ρ) (opt-sound j ρ) (λ k → h (ρ , k))
... | X@(bin _ _ _) | h = ix-minusᵣ-cong sp su (opt-sound i ρ) (opt-sound j ρ) (λ k → h (ρ , k))
... | X@(scaledown _ _) | h = ix-minusᵣ-cong sp su (opt-sound i ρ) (opt-sound j ρ) (λ k → h (ρ , k))
... | X@(minus _) | h = ix-minusᵣ-cong sp su (opt-sound i ρ) (opt-sound j ρ) (λ k → h (ρ , k))
... | X@(ix-minus _ _ _ _ _) | h = ix-minusᵣ-cong sp su (opt-sound i ρ) (opt-sound j ρ) (λ k → h (ρ , k))
... | X@(ix-minusᵣ _ _ _ _ _) | h = ix-minusᵣ-cong sp su (opt-sound i ρ) (opt-sound j ρ) (λ k → h (ρ , k))

------------------------------------------------------------------------
-- Iteration

opt*-sound : ∀ n (e : E Γ is) (ρ : Env Γ) → Same is (⟦ opt* n e ⟧ ρ) (⟦ e ⟧ ρ)
opt*-sound ℕ.zero  e ρ = Same-refl _ (⟦ e ⟧ ρ)
opt*-sound (suc n) e ρ with same e (opt e)
... | true  = Same-refl _ (⟦ e ⟧ ρ)
... | false = Same-trans _ (opt*-sound n (opt e) ρ) (opt-sound e ρ)
