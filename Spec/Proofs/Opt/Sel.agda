{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- Soundness of the optimiser's selection and η rules (Spec.Lang.Opt,
-- the sels/sel/selb cases and the η-rules that turn imapb, slide and
-- backslide into scalar maps): each lemma says that the right-hand
-- side of a rule means, pointwise, what its left-hand side means.
-- Rules that hold by definition of ⟦_⟧ (selection through bin, minus,
-- scaledown, un f) need no lemma and are proved by refl in
-- Spec.Proofs.Opt.Main.  No law of the scalars is needed.
--
-- (sels-imapb, sels-backslide and selb-imapb are the paper's §7.1.1
-- rules in their direct form; the current optimiser reaches the same
-- results through the η-rules and sels-imaps.)
--
-- Also: the index lemmas the β-rule for blocks needs (a proof of
-- s * p ≈ q is unique; div and mod invert combine).
------------------------------------------------------------------------
open import Spec.Scalar using (Scalar)

module Spec.Proofs.Opt.Sel (𝕊 : Scalar) where

open import Data.Nat as ℕ using (ℕ)
import Data.Nat.Properties as ℕₚ
open import Data.Fin as F using (Fin)
import Data.Fin.Properties as Fₚ
open import Data.Product using (_,_; proj₁; proj₂)
open import Relation.Nullary using (yes; no)
open import Relation.Binary.PropositionalEquality hiding (subst)

open import Spec.Array.Base as A using (S; ι; _⊗_; P; Ar; K; _*_≈_)
open import Spec.Array.Index as Ix using (_⊖ₚ_; _⊖ᵣₚ_; _⊕ₚ_; combine)
open import Spec.Array.Index.Properties using (div-combine; mod-combine)
open import Spec.Lang.Syntax
open import Spec.Lang.Subst
open import Spec.Lang.Eval 𝕊
open import Spec.Proofs.Sum using (sum-cong)
open import Spec.Proofs.Val 𝕊
open import Spec.Proofs.Ren 𝕊 using (eval-↑; eval-ren; ext-EnvRen)
import Spec.Array.Slide as Sl
open import Spec.Proofs.Sub 𝕊 using (eval-sub₁)

private
  variable
    Γ : Ctx
    s p q r r′ u t : S

infix 4 _≈_
_≈_ : ∀ {s} → Ar s (Scalar.R 𝕊) → Ar s (Scalar.R 𝕊) → Set
a ≈ b = ∀ i → a i ≡ b i

------------------------------------------------------------------------
-- Blocking on indices

private
  ι-unique : ∀ {a b c} (m : ι a * ι b ≈ ι c) (e : a ℕ.* b ≡ c)
           → Relation.Binary.PropositionalEquality.subst (λ c → ι a * ι b ≈ ι c) e ι ≡ m
  ι-unique {a} {b} ι e =
    cong (λ e → Relation.Binary.PropositionalEquality.subst (λ c → ι a * ι b ≈ ι c) e ι)
         (ℕₚ.≡-irrelevant e refl)

*≈-irrelevant : (m m′ : s * p ≈ q) → m ≡ m′
*≈-irrelevant ι        m′         = ι-unique m′ refl
*≈-irrelevant (m ⊗ n) (m′ ⊗ n′) = cong₂ _⊗_ (*≈-irrelevant m m′) (*≈-irrelevant n n′)

------------------------------------------------------------------------
-- Scalar selection (sels)

sels-imaps : (a : E (Γ ▹ ix s) (ar A.unit)) (i : E Γ (ix s)) (ρ : Env Γ)
           → ⟦ sub v₀ a i ⟧ ρ ≈ ⟦ sels (imaps a) i ⟧ ρ
sels-imaps a i ρ (ι F.zero) = eval-sub₁ v₀ a i ρ (ι F.zero)

sels-imapb : (m : s * p ≈ q) (a : E (Γ ▹ ix s) (ar p)) (i : E Γ (ix q)) (ρ : Env Γ)
           → ⟦ sels (sub v₀ a (div m i)) (mod m i) ⟧ ρ ≈ ⟦ sels (imapb m a) i ⟧ ρ
sels-imapb m a i ρ _ = eval-sub₁ v₀ a (div m i) ρ (Ix.mod m (⟦ i ⟧ ρ))

sels-backslide : (j : E Γ (ix s)) (a : E Γ (ar u)) (su : A.suc p ≈ u) (sp : A._+_≈_ s p r)
                 (i : E Γ (ix r)) (ρ : Env Γ)
               → ⟦ ix-minus i j sp su (sels (↑ a) (var v₀)) ⟧ ρ ≈ ⟦ sels (backslide j a su sp) i ⟧ ρ
sels-backslide j a su sp i ρ l with (⟦ i ⟧ ρ ⊖ₚ ⟦ j ⟧ ρ) su sp
... | yes (k , _) = eval-↑ a ρ k k
... | no  _       = refl

sels-sum : (a : E (Γ ▹ ix t) (ar s)) (i : E Γ (ix s)) (ρ : Env Γ)
         → ⟦ sum (sels a (↑ i)) ⟧ ρ ≈ ⟦ sels (sum a) i ⟧ ρ
sels-sum a i ρ _ = sum-cong λ k → cong (⟦ a ⟧ (ρ , k)) (eval-↑ i ρ k)

sels-zero-but : (j k : E Γ (ix t)) (a : E Γ (ar s)) (i : E Γ (ix s)) (ρ : Env Γ)
              → ⟦ zero-but j k (sels a i) ⟧ ρ ≈ ⟦ sels (zero-but j k a) i ⟧ ρ
sels-zero-but j k a i ρ _ with ⟦ j ⟧ ρ ≟ₚ ⟦ k ⟧ ρ
... | yes _ = refl
... | no  _ = refl

sels-ix-minus : (j : E Γ (ix r)) (k : E Γ (ix t)) (sp : A._+_≈_ t p r) (su : A.suc p ≈ u)
                (a : E (Γ ▹ ix u) (ar s)) (i : E Γ (ix s)) (ρ : Env Γ)
              → ⟦ ix-minus j k sp su (sels a (↑ i)) ⟧ ρ ≈ ⟦ sels (ix-minus j k sp su a) i ⟧ ρ
sels-ix-minus j k sp su a i ρ _ with (⟦ j ⟧ ρ ⊖ₚ ⟦ k ⟧ ρ) su sp
... | yes (l , _) = cong (⟦ a ⟧ (ρ , l)) (eval-↑ i ρ l)
... | no  _       = refl

sels-ix-minusᵣ : (j : E Γ (ix r)) (k : E Γ (ix u)) (sp : A._+_≈_ t p r) (su : A.suc p ≈ u)
                 (a : E (Γ ▹ ix t) (ar s)) (i : E Γ (ix s)) (ρ : Env Γ)
               → ⟦ ix-minusᵣ j k sp su (sels a (↑ i)) ⟧ ρ ≈ ⟦ sels (ix-minusᵣ j k sp su a) i ⟧ ρ
sels-ix-minusᵣ j k sp su a i ρ _ with (⟦ j ⟧ ρ ⊖ᵣₚ ⟦ k ⟧ ρ) su sp
... | yes (l , _) = cong (⟦ a ⟧ (ρ , l)) (eval-↑ i ρ l)
... | no  _       = refl

------------------------------------------------------------------------
-- Selection of an inner array (sel)

sel-imap : (a : E (Γ ▹ ix s) (ar p)) (i : E Γ (ix s)) (ρ : Env Γ)
         → ⟦ sub v₀ a i ⟧ ρ ≈ ⟦ sel (imap a) i ⟧ ρ
sel-imap a i ρ = eval-sub₁ v₀ a i ρ

sel-sum : (a : E (Γ ▹ ix t) (ar (s ⊗ p))) (i : E Γ (ix s)) (ρ : Env Γ)
        → ⟦ sum (sel a (↑ i)) ⟧ ρ ≈ ⟦ sel (sum a) i ⟧ ρ
sel-sum a i ρ j = sum-cong λ k → cong (λ x → ⟦ a ⟧ (ρ , k) (x ⊗ j)) (eval-↑ i ρ k)

sel-zero-but : (j k : E Γ (ix t)) (a : E Γ (ar (s ⊗ p))) (i : E Γ (ix s)) (ρ : Env Γ)
             → ⟦ zero-but j k (sel a i) ⟧ ρ ≈ ⟦ sel (zero-but j k a) i ⟧ ρ
sel-zero-but j k a i ρ _ with ⟦ j ⟧ ρ ≟ₚ ⟦ k ⟧ ρ
... | yes _ = refl
... | no  _ = refl

sel-ix-minus : (j : E Γ (ix r)) (k : E Γ (ix t)) (sp : A._+_≈_ t q r) (su : A.suc q ≈ u)
               (a : E (Γ ▹ ix u) (ar (s ⊗ p))) (i : E Γ (ix s)) (ρ : Env Γ)
             → ⟦ ix-minus j k sp su (sel a (↑ i)) ⟧ ρ ≈ ⟦ sel (ix-minus j k sp su a) i ⟧ ρ
sel-ix-minus j k sp su a i ρ x with (⟦ j ⟧ ρ ⊖ₚ ⟦ k ⟧ ρ) su sp
... | yes (l , _) = cong (λ y → ⟦ a ⟧ (ρ , l) (y ⊗ x)) (eval-↑ i ρ l)
... | no  _       = refl

sel-ix-minusᵣ : (j : E Γ (ix r)) (k : E Γ (ix u)) (sp : A._+_≈_ t q r) (su : A.suc q ≈ u)
                (a : E (Γ ▹ ix t) (ar (s ⊗ p))) (i : E Γ (ix s)) (ρ : Env Γ)
              → ⟦ ix-minusᵣ j k sp su (sel a (↑ i)) ⟧ ρ ≈ ⟦ sel (ix-minusᵣ j k sp su a) i ⟧ ρ
sel-ix-minusᵣ j k sp su a i ρ x with (⟦ j ⟧ ρ ⊖ᵣₚ ⟦ k ⟧ ρ) su sp
... | yes (l , _) = cong (λ y → ⟦ a ⟧ (ρ , l) (y ⊗ x)) (eval-↑ i ρ l)
... | no  _       = refl

------------------------------------------------------------------------
-- Selection of a block (selb)

selb-imapb : (m m′ : s * p ≈ q) (a : E (Γ ▹ ix s) (ar p)) (i : E Γ (ix s)) (ρ : Env Γ)
           → ⟦ sub v₀ a i ⟧ ρ ≈ ⟦ selb m (imapb m′ a) i ⟧ ρ
selb-imapb m m′ a i ρ j with *≈-irrelevant m m′
... | refl = trans (eval-sub₁ v₀ a i ρ j)
                   (sym (cong₂ (λ x y → ⟦ a ⟧ (ρ , x) y) (div-combine m _ j) (mod-combine m _ j)))

selb-sum : (m : s * p ≈ q) (a : E (Γ ▹ ix t) (ar q)) (i : E Γ (ix s)) (ρ : Env Γ)
         → ⟦ sum (selb m a (↑ i)) ⟧ ρ ≈ ⟦ selb m (sum a) i ⟧ ρ
selb-sum m a i ρ j = sum-cong λ k → cong (λ x → ⟦ a ⟧ (ρ , k) (combine m x j)) (eval-↑ i ρ k)

selb-zero-but : (m : s * p ≈ q) (j k : E Γ (ix t)) (a : E Γ (ar q)) (i : E Γ (ix s)) (ρ : Env Γ)
              → ⟦ zero-but j k (selb m a i) ⟧ ρ ≈ ⟦ selb m (zero-but j k a) i ⟧ ρ
selb-zero-but m j k a i ρ _ with ⟦ j ⟧ ρ ≟ₚ ⟦ k ⟧ ρ
... | yes _ = refl
... | no  _ = refl

selb-ix-minus : (m : s * p ≈ q) (j : E Γ (ix r)) (k : E Γ (ix t))
                (sp : A._+_≈_ t r′ r) (su : A.suc r′ ≈ u)
                (a : E (Γ ▹ ix u) (ar q)) (i : E Γ (ix s)) (ρ : Env Γ)
              → ⟦ ix-minus j k sp su (selb m a (↑ i)) ⟧ ρ ≈ ⟦ selb m (ix-minus j k sp su a) i ⟧ ρ
selb-ix-minus m j k sp su a i ρ x with (⟦ j ⟧ ρ ⊖ₚ ⟦ k ⟧ ρ) su sp
... | yes (l , _) = cong (λ y → ⟦ a ⟧ (ρ , l) (combine m y x)) (eval-↑ i ρ l)
... | no  _       = refl

selb-ix-minusᵣ : (m : s * p ≈ q) (j : E Γ (ix r)) (k : E Γ (ix u))
                 (sp : A._+_≈_ t r′ r) (su : A.suc r′ ≈ u)
                 (a : E (Γ ▹ ix t) (ar q)) (i : E Γ (ix s)) (ρ : Env Γ)
               → ⟦ ix-minusᵣ j k sp su (selb m a (↑ i)) ⟧ ρ ≈ ⟦ selb m (ix-minusᵣ j k sp su a) i ⟧ ρ
selb-ix-minusᵣ m j k sp su a i ρ x with (⟦ j ⟧ ρ ⊖ᵣₚ ⟦ k ⟧ ρ) su sp
... | yes (l , _) = cong (λ y → ⟦ a ⟧ (ρ , l) (combine m y x)) (eval-↑ i ρ l)
... | no  _       = refl

------------------------------------------------------------------------
-- η-rules: blocked maps and windows as scalar maps

imapb-η : (m : s * p ≈ q) (e : E (Γ ▹ ix s) (ar p)) (ρ : Env Γ)
        → ⟦ imaps (sels (sub v₀ (ren (ext vₛ) e) (div m (var v₀))) (mod m (var v₀))) ⟧ ρ
          ≈ ⟦ imapb m e ⟧ ρ
imapb-η m e ρ k =
  trans (eval-sub₁ v₀ (ren (ext vₛ) e) (div m (var v₀)) (ρ , k) (Ix.mod m k))
        (eval-ren (ext vₛ) {γ = (ρ , k) , Ix.div m k} {δ = ρ , Ix.div m k}
                  (ext-EnvRen {ρ = vₛ} {γ = ρ , k} {δ = ρ} (λ {is} x → Same-refl is (lookup x ρ))
                              (Ix.div m k))
                  e (Ix.mod m k))

slide-η : (i : E Γ (ix s)) (a : E Γ (ar r)) (sp : A._+_≈_ s p r) (su : A.suc p ≈ u) (ρ : Env Γ)
        → ⟦ imaps (sels (↑ a) (ix-plus (↑ i) (var v₀) su sp)) ⟧ ρ ≈ ⟦ slide i sp a su ⟧ ρ
slide-η i a sp su ρ j =
  trans (eval-↑ a ρ j _) (cong (λ y → ⟦ a ⟧ ρ ((y ⊕ₚ j) su sp)) (eval-↑ i ρ j))

private
  at-backslide : (su : A.suc p ≈ u) (sp : A._+_≈_ s p r) (x : P s) (b : Ar u (Scalar.R 𝕊))
                 (l : P r) (z : P A.unit)
               → at ((l ⊖ₚ x) su sp) (λ k _ → b k) z ≡ Sl.backslide x b su (Scalar.0# 𝕊) sp l
  at-backslide su sp x b l z with (l ⊖ₚ x) su sp
  ... | yes _ = refl
  ... | no  _ = refl

backslide-η : (i : E Γ (ix s)) (a : E Γ (ar u)) (su : A.suc p ≈ u) (sp : A._+_≈_ s p r)
              (ρ : Env Γ)
            → ⟦ imaps (ix-minus (var v₀) (↑ i) sp su (sels (↑↑ a) (var v₀))) ⟧ ρ
              ≈ ⟦ backslide i a su sp ⟧ ρ
backslide-η i a su sp ρ l =
  trans (ix-minus-cong {i = l} {i′ = l} sp su {g = λ k _ → ⟦ a ⟧ ρ k} refl (eval-↑ i ρ l)
                       (λ k _ → trans (eval-↑ (↑ a) (ρ , l) k k) (eval-↑ a ρ l k)) (ι F.zero))
        (at-backslide su sp (⟦ i ⟧ ρ) (⟦ a ⟧ ρ) l (ι F.zero))
