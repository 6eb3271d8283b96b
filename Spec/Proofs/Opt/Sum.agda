{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- Soundness of the optimiser's rules for sums (Spec.Lang.Opt, the sum
-- and scaledown cases, and `sum-zb`): a sum goes under a map (by
-- exchanging the two index variables), splits over ⊞, absorbs a
-- scaledown, and a sum of a zero-but whose condition pins the
-- summation index collapses (to one term by substitution, or to an
-- index subtraction).
--
-- Needs the Laws of the scalars: addition is a commutative monoid
-- (every lemma about sums), scaledown is additive.
------------------------------------------------------------------------
open import Spec.Scalar using (Scalar)
open import Spec.Scalar.Laws using (Laws)

module Spec.Proofs.Opt.Sum (𝕊 : Scalar) (laws : Laws 𝕊) where

open import Data.Empty using (⊥; ⊥-elim)
open import Data.Fin as F using (Fin)
import Data.Nat.Properties as ℕₚ
open import Axiom.UniquenessOfIdentityProofs using (module Decidable⇒UIP)
open import Data.Maybe using (Maybe; just; nothing)
open import Data.Product using (∃; _,_)
open import Data.Unit using (⊤; tt)
open import Relation.Nullary using (Dec; yes; no; ¬_)
open import Relation.Binary.PropositionalEquality hiding (subst)

open import Spec.Array.Base as A using (S; ι; _⊗_; P; Ar; K; _+_≈_; suc_≈_)
open import Spec.Array.Index as Ix using (_⊕ₚ_; _⊖ₚ_; _⊖ᵣₚ_)
open import Spec.Lang.Syntax
open import Spec.Lang.Subst
open import Spec.Lang.Var using (_≟IS_)
open import Spec.Lang.Opt using (sum-zb)
open import Spec.Lang.Eval 𝕊
open import Spec.Proofs.Sum as Sum using (sum-cong)
open import Spec.Array.Index.Properties using (⊕ₚ-injectiveʳ; ⊕ₚ-injectiveˡ)
open import Spec.Array.Properties using (_≟ₛ_)
open import Spec.Proofs.Val 𝕊
open import Spec.Proofs.Ren 𝕊 using (eval-ctx-swap; drop; lookup-wkv)
open import Spec.Proofs.Sub 𝕊 using (eval-sub₁)

open Scalar 𝕊 using (R; 0#) renaming (_+_ to _+ʳ_)
open Laws laws using (+-isCommutativeMonoid; scaledown-+; scaledown-0#; -‿+; -‿0#)

private
  variable
    Γ : Ctx
    is : IS
    s p q r u t : S

infix 4 _≈_
_≈_ : Ar s R → Ar s R → Set
a ≈ b = ∀ i → a i ≡ b i

private
  ΣR : Ar s R → R
  ΣR = A.sum _+ʳ_ 0#

  sum-zero : {a : Ar s R} → (∀ i → a i ≡ 0#) → ΣR a ≡ 0#
  sum-zero = Sum.sum-zero +-isCommutativeMonoid

  sum-single : (k : P s) {a : Ar s R} → (∀ i → ¬ i ≡ k → a i ≡ 0#) → ΣR a ≡ a k
  sum-single = Sum.sum-single +-isCommutativeMonoid

------------------------------------------------------------------------
-- Simple rules

sum-zero-sound : (ρ : Env Γ) → ⟦ zero {s = p} ⟧ ρ ≈ ⟦ sum {s = s} zero ⟧ ρ
sum-zero-sound {s = s} ρ l = sym (sum-zero {s = s} λ _ → refl)

sum-imaps : (a : E (Γ ▹ ix t ▹ ix s) (ar A.unit)) (ρ : Env Γ)
          → ⟦ imaps (sum (ctx-swap v₁ a)) ⟧ ρ ≈ ⟦ sum (imaps a) ⟧ ρ
sum-imaps a ρ i = sum-cong λ k → eval-ctx-swap v₁ a ((ρ , k) , i) (ι F.zero)

sum-imap : (a : E (Γ ▹ ix t ▹ ix s) (ar p)) (ρ : Env Γ)
         → ⟦ imap (sum (ctx-swap v₁ a)) ⟧ ρ ≈ ⟦ sum (imap a) ⟧ ρ
sum-imap a ρ (i ⊗ j) = sum-cong λ k → eval-ctx-swap v₁ a ((ρ , k) , i) j

sum-imapb : (m : A._*_≈_ s p q) (a : E (Γ ▹ ix t ▹ ix s) (ar p)) (ρ : Env Γ)
          → ⟦ imapb m (sum (ctx-swap v₁ a)) ⟧ ρ ≈ ⟦ sum (imapb m a) ⟧ ρ
sum-imapb m a ρ l = sum-cong λ k → eval-ctx-swap v₁ a ((ρ , k) , Ix.div m l) (Ix.mod m l)

sum-plus : (a b : E (Γ ▹ ix t) (ar p)) (ρ : Env Γ)
         → ⟦ sum a ⊞ sum b ⟧ ρ ≈ ⟦ sum (a ⊞ b) ⟧ ρ
sum-plus a b ρ l =
  sym (Sum.sum-∙ +-isCommutativeMonoid (λ k → ⟦ a ⟧ (ρ , k) l) (λ k → ⟦ b ⟧ (ρ , k) l))

scaledown-sum : (n : _) (a : E (Γ ▹ ix t) (ar p)) (ρ : Env Γ)
              → ⟦ sum (scaledown n a) ⟧ ρ ≈ ⟦ scaledown n (sum a) ⟧ ρ
scaledown-sum n a ρ l =
  sym (Sum.sum-*-distribˡ +-isCommutativeMonoid {_*_ = λ _ y → Scalar.scaledown 𝕊 n y}
         (λ _ y z → scaledown-+ n y z) (λ _ → scaledown-0# n) 0# (λ k → ⟦ a ⟧ (ρ , k) l))

sum-minus : (a : E (Γ ▹ ix t) (ar p)) (ρ : Env Γ)
          → ⟦ minus (sum a) ⟧ ρ ≈ ⟦ sum (minus a) ⟧ ρ
sum-minus a ρ l =
  Sum.sum-*-distribˡ +-isCommutativeMonoid {_*_ = λ _ y → Scalar.-_ 𝕊 y}
    (λ _ y z → -‿+ y z) (λ _ → -‿0#) 0# (λ k → ⟦ a ⟧ (ρ , k) l)

------------------------------------------------------------------------
-- Sums of conditionals, semantically

if-eq-refl : (k : P s) (a : Ar p R) (l : P p) → if-eq (k ≟ₚ k) a l ≡ a l
if-eq-refl k a l with k ≟ₚ k
... | yes _  = refl
... | no  ne = ⊥-elim (ne refl)

if-eq-sym : (k k′ : P s) (a : Ar p R) (l : P p) → if-eq (k ≟ₚ k′) a l ≡ if-eq (k′ ≟ₚ k) a l
if-eq-sym k k′ a l with k ≟ₚ k′ | k′ ≟ₚ k
... | yes _ | yes _  = refl
... | no  _ | no  _  = refl
... | yes e | no  ne = ⊥-elim (ne (sym e))
... | no ne | yes e  = ⊥-elim (ne (sym e))

if-eq-ne : {k k′ : P s} → ¬ k ≡ k′ → (a : Ar p R) (l : P p)
         → if-eq (k ≟ₚ k′) a l ≡ 0#
if-eq-ne {k = k} {k′} ne a l with k ≟ₚ k′
... | yes e = ⊥-elim (ne e)
... | no  _ = refl

-- Σₖ [k = x] f k = f x
sum-if-eqˡ : (x : P s) (f : P s → Ar p R) (l : P p)
           → ΣR (λ k → if-eq (k ≟ₚ x) (f k) l) ≡ f x l
sum-if-eqˡ x f l = trans (sum-single x λ k ne → if-eq-ne ne (f k) l) (if-eq-refl x (f x) l)

-- Σₖ [x = k] f k = f x
sum-if-eqʳ : (x : P s) (f : P s → Ar p R) (l : P p)
           → ΣR (λ k → if-eq (x ≟ₚ k) (f k) l) ≡ f x l
sum-if-eqʳ x f l = trans (sum-cong λ k → if-eq-sym x k (f k) l) (sum-if-eqˡ x f l)

-- Σₖ [x = y] f k = [x = y] Σₖ f k
sum-if-eq-const : ∀ {x y : P t} (d : Dec (x ≡ y)) (f : P s → Ar p R) (l : P p)
                → ΣR (λ k → if-eq d (f k) l) ≡ if-eq d (λ l → ΣR (λ k → f k l)) l
sum-if-eq-const (yes _) f l = refl
sum-if-eq-const {s = s} (no  _) f l = sum-zero {s = s} λ _ → refl

-- Σₖ [x = y ⊕ k] f k = f (x ⊖ y)
sum-if-⊕ʳ : (su : suc p ≈ u) (sp : A._+_≈_ s p r) (x : P r) (y : P s) (f : P u → Ar q R) (l : P q)
          → ΣR (λ k → if-eq (x ≟ₚ (y ⊕ₚ k) su sp) (f k) l) ≡ at ((x ⊖ₚ y) su sp) f l
sum-if-⊕ʳ {u = u} su sp x y f l with (x ⊖ₚ y) su sp
... | yes (k₀ , e) =
  trans (sum-single k₀ λ k ne → if-eq-ne (λ e′ → ne (⊕ₚ-injectiveʳ y su sp (trans (sym e′) (sym e))))
                                         (f k) l)
        (trans (cong (λ z → if-eq (z ≟ₚ (y ⊕ₚ k₀) su sp) (f k₀) l) (sym e))
               (if-eq-refl ((y ⊕ₚ k₀) su sp) (f k₀) l))
... | no ∄k = sum-zero {s = u} λ k → if-eq-ne (λ e′ → ∄k (k , sym e′)) (f k) l

-- Σₖ [x = k ⊕ y] f k = f (x ⊖ᵣ y)
sum-if-⊕ˡ : (su : suc p ≈ u) (sp : A._+_≈_ s p r) (x : P r) (y : P u) (f : P s → Ar q R) (l : P q)
          → ΣR (λ k → if-eq (x ≟ₚ (k ⊕ₚ y) su sp) (f k) l) ≡ at ((x ⊖ᵣₚ y) su sp) f l
sum-if-⊕ˡ {s = s} su sp x y f l with (x ⊖ᵣₚ y) su sp
... | yes (k₀ , e) =
  trans (sum-single k₀ λ k ne → if-eq-ne (λ e′ → ne (⊕ₚ-injectiveˡ y su sp (trans (sym e′) (sym e))))
                                         (f k) l)
        (trans (cong (λ z → if-eq (z ≟ₚ (k₀ ⊕ₚ y) su sp) (f k₀) l) (sym e))
               (if-eq-refl ((k₀ ⊕ₚ y) su sp) (f k₀) l))
... | no ∄k = sum-zero {s = s} λ k → if-eq-ne (λ e′ → ∄k (k , sym e′)) (f k) l

------------------------------------------------------------------------
-- Strengthening is sound

-- x is the variable v (of a possibly different sort, a priori)
data SameVar {Γ : Ctx} {is : IS} (v : is ∈ Γ) : ∀ {ip} → ip ∈ Γ → Set where
  same : SameVar v v

private
  open Decidable⇒UIP _≟IS_ using () renaming (≡-irrelevant to IS-irrelevant)

  SameVar-subst : ∀ {v : is ∈ Γ} {ip} {x : ip ∈ Γ} → SameVar v x
                → (e : ip ≡ is) → Relation.Binary.PropositionalEquality.subst (_∈ Γ) e x ≡ v
  SameVar-subst {Γ = Γ} {v = v} same e =
    cong (λ e → Relation.Binary.PropositionalEquality.subst (_∈ Γ) e v) (IS-irrelevant e refl)

-- (matching `same` directly would need K when both sorts are known)
SameVar-≡ : {v x : is ∈ Γ} → SameVar v x → x ≡ v
SameVar-≡ h = SameVar-subst h refl

NothingOK : (v : is ∈ Γ) → E Γ (ix s) → Set
NothingOK v (var x) = SameVar v x
NothingOK v _       = ⊤

StrOK : (v : is ∈ Γ) → E Γ (ix s) → Maybe (E (Γ / v) (ix s)) → Set
StrOK v i nothing   = NothingOK v i
StrOK v i (just i′) = ∀ γ → ⟦ i ⟧ γ ≡ ⟦ i′ ⟧ (drop v γ)

str-ok : (v : is ∈ Γ) (i : E Γ (ix s)) → StrOK v i (str v i)
str-ok v (var x) with eq? v x
... | eq      = same
... | neq _ y = λ γ → lookup-wkv v y γ
str-ok v (ix-const i) = λ γ → refl
str-ok v (argmax _ _) = tt
str-ok v (div m i) with str v i | str-ok v i
... | nothing | _ = tt
... | just i′ | h = λ γ → cong (Ix.div m) (h γ)
str-ok v (mod m i) with str v i | str-ok v i
... | nothing | _ = tt
... | just i′ | h = λ γ → cong (Ix.mod m) (h γ)
str-ok v (ix-plus i j su sp) with str v i | str-ok v i | str v j | str-ok v j
... | nothing | _  | _       | _  = tt
... | just i′ | hi | nothing | _  = tt
... | just i′ | hi | just j′ | hj = λ γ → cong₂ (λ a b → (a ⊕ₚ b) su sp) (hi γ) (hj γ)
