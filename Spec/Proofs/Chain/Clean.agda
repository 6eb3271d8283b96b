{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- The decision of placeholder-freedom is complete: `pf? c` finds a
-- proof whenever one exists (pf?-complete), so a chain it rejects is
-- not placeholder-free (pf?-nothing), and the elaborator's rejection
-- "a binding mentions a derivative placeholder" (Spec.Front.Model)
-- says exactly that.
--
-- Two halves: un-renaming finds a preimage of every renamed
-- expression when the partial inverse is defined on the renaming's
-- image (unren-complete), and emb⁻, the index arithmetic that inverts
-- emb, is defined on emb's image (emb⁻-complete).
------------------------------------------------------------------------
module Spec.Proofs.Chain.Clean where

open import Data.Bool using (true; false; T)
open import Data.Empty using (⊥-elim)
open import Data.Maybe using (Maybe; just; nothing; Is-just)
open import Data.Maybe.Relation.Unary.Any using (just)
open import Data.Nat using (ℕ; zero; suc; pred; _+_; _∸_; _<_; _≤_; _<ᵇ_; _≟_)
open import Data.Nat.Properties
  using (+-suc; +-identityʳ; <ᵇ⇒<; <⇒<ᵇ; +-mono-<; ≮⇒≥; +-monoˡ-≤; m+n∸n≡m; <⇒≱)
open import Data.Product using (_,_)
open import Data.Unit using (tt)
open import Agda.Builtin.Nat using (div-helper)
open import Relation.Binary.PropositionalEquality using (_≡_; _≢_; refl; cong; sym; trans; subst; inspect; [_])
open import Relation.Nullary using (yes; no; ¬_)

open import Spec.Lang.Syntax
open import Spec.Lang.Subst using (Ren; ren; ext)
open import Spec.Lang.Chain using (Chain; ε; _▹_)
open import Spec.Lang.Unren using (Inv; inv-ext; unren; _>>=_)
open import Spec.Lang.Chain.Clean using (clean; emb; size; emb-idx; emb⁻; idx-emb; candidate; PF; pf?′; pf?)

private
  variable
    Γ Δ : Ctx
    is ip : IS

------------------------------------------------------------------------
-- Un-renaming is complete

-- a partial inverse of ρ that is defined on ρ's image
Onto : {ρ : Ren Γ Δ} → Inv ρ → Set
Onto {Γ} {ρ = ρ} inv = ∀ {is} (x : is ∈ Γ) → Is-just (inv (ρ x))

private
  -- the bind of Spec.Lang.Unren, on a defined value
  bind : ∀ {A B : Set} {m : Maybe A} {f : A → Maybe B}
       → Is-just m → (∀ a → Is-just (f a)) → Is-just (m >>= f)
  bind (just {x = a} _) k = k a

onto-ext : {ρ : Ren Γ Δ} {inv : Inv ρ} → Onto inv → Onto (inv-ext {ip = ip} inv)
onto-ext o (var# zero refl) = just tt
onto-ext {ρ = ρ} {inv} o (var# (suc n) p) with ρ (var# n p) | o (var# n p)
... | var# m q | h with inv (var# m q)
... | just _ = just tt
... | nothing with h
...   | ()

unren-complete : (ρ : Ren Γ Δ) (inv : Inv ρ) → Onto inv → (e : E Γ is)
               → Is-just (unren ρ inv (ren ρ e))
unren-complete ρ inv o (var x) with inv (ρ x) | o x
... | just _  | _  = just tt
... | nothing | ()
unren-complete ρ inv o zero = just tt
unren-complete ρ inv o one  = just tt
unren-complete ρ inv o (imaps e) =
  bind (unren-complete (ext ρ) (inv-ext inv) (onto-ext o) e) λ _ → just tt
unren-complete ρ inv o (sels a i) =
  bind (unren-complete ρ inv o a) λ _ → bind (unren-complete ρ inv o i) λ _ → just tt
unren-complete ρ inv o (imap e) =
  bind (unren-complete (ext ρ) (inv-ext inv) (onto-ext o) e) λ _ → just tt
unren-complete ρ inv o (sel a i) =
  bind (unren-complete ρ inv o a) λ _ → bind (unren-complete ρ inv o i) λ _ → just tt
unren-complete ρ inv o (imapb m e) =
  bind (unren-complete (ext ρ) (inv-ext inv) (onto-ext o) e) λ _ → just tt
unren-complete ρ inv o (selb m a i) =
  bind (unren-complete ρ inv o a) λ _ → bind (unren-complete ρ inv o i) λ _ → just tt
unren-complete ρ inv o (sum e) =
  bind (unren-complete (ext ρ) (inv-ext inv) (onto-ext o) e) λ _ → just tt
unren-complete ρ inv o (zero-but i j a) =
  bind (unren-complete ρ inv o i) λ _ → bind (unren-complete ρ inv o j) λ _ →
  bind (unren-complete ρ inv o a) λ _ → just tt
unren-complete ρ inv o (slide i sp a su) =
  bind (unren-complete ρ inv o i) λ _ → bind (unren-complete ρ inv o a) λ _ → just tt
unren-complete ρ inv o (backslide i a su sp) =
  bind (unren-complete ρ inv o i) λ _ → bind (unren-complete ρ inv o a) λ _ → just tt
unren-complete ρ inv o (un f a) = bind (unren-complete ρ inv o a) λ _ → just tt
unren-complete ρ inv o (bin op a b) =
  bind (unren-complete ρ inv o a) λ _ → bind (unren-complete ρ inv o b) λ _ → just tt
unren-complete ρ inv o (scaledown n a) = bind (unren-complete ρ inv o a) λ _ → just tt
unren-complete ρ inv o (minus a) = bind (unren-complete ρ inv o a) λ _ → just tt
unren-complete ρ inv o (ix-const i) = just tt
unren-complete ρ inv o (div m i) = bind (unren-complete ρ inv o i) λ _ → just tt
unren-complete ρ inv o (mod m i) = bind (unren-complete ρ inv o i) λ _ → just tt
unren-complete ρ inv o (ix-plus i j su sp) =
  bind (unren-complete ρ inv o i) λ _ → bind (unren-complete ρ inv o j) λ _ → just tt
unren-complete ρ inv o (argmax w e) =
  bind (unren-complete (ext ρ) (inv-ext inv) (onto-ext o) e) λ _ → just tt
unren-complete ρ inv o (ix-minus i j sp su e) =
  bind (unren-complete ρ inv o i) λ _ → bind (unren-complete ρ inv o j) λ _ →
  bind (unren-complete (ext ρ) (inv-ext inv) (onto-ext o) e) λ _ → just tt
unren-complete ρ inv o (ix-minusᵣ i j sp su e) =
  bind (unren-complete ρ inv o i) λ _ → bind (unren-complete ρ inv o j) λ _ →
  bind (unren-complete (ext ρ) (inv-ext inv) (onto-ext o) e) λ _ → just tt

------------------------------------------------------------------------
-- emb⁻ is defined on emb's image

private
  half : ∀ k i → div-helper k 1 (i + i) 1 ≡ k + i
  half k zero    = sym (+-identityʳ k)
  half k (suc i) rewrite +-suc i i = trans (half (suc k) i) (sym (+-suc k i))

  true-lt : ∀ {m n} → (m <ᵇ n) ≡ true → m < n
  true-lt {m} {n} e = <ᵇ⇒< m n (subst T (sym e) tt)

  lt-true : ∀ {m n} → m < n → (m <ᵇ n) ≡ true
  lt-true {m} {n} p with m <ᵇ n | <⇒<ᵇ p
  ... | true  | _ = refl
  ... | false | ()

  false-ge : ∀ {m n} → (m <ᵇ n) ≡ false → n ≤ m
  false-ge e = ≮⇒≥ λ p → false≢true (trans (sym e) (lt-true p))
    where false≢true : false ≢ true
          false≢true ()

  -- the clean index emb-idx sent somewhere is found again
  candidate-emb : ∀ k i → candidate k (emb-idx k i) ≡ i
  candidate-emb k i with i <ᵇ k | inspect (i <ᵇ_) k
  ... | true  | [ lt ] = below (lt-true {i + i} {k + k} (+-mono-< (true-lt {i} {k} lt) (true-lt {i} {k} lt)))
    where
      below : ((i + i) <ᵇ (k + k)) ≡ true → candidate k (i + i) ≡ i
      below e with (i + i) <ᵇ (k + k)
      below refl | true = half 0 i
  ... | false | [ ge ] with (i + k) <ᵇ (k + k) | inspect ((i + k) <ᵇ_) (k + k)
  ...   | false | _      = m+n∸n≡m i k
  ...   | true  | [ lt ] = ⊥-elim (<⇒≱ (true-lt {i + k} {k + k} lt) (+-monoˡ-≤ k (false-ge {i} {k} ge)))

emb⁻-complete : (c : Chain Δ) (k : ℕ) (k≡ : k ≡ size c) → Onto {ρ = emb c} (emb⁻ c k k≡)
emb⁻-complete c k refl x with emb c x | idx-emb c x
... | var# n p | n≡ with emb-idx k (candidate k n) ≟ n
...   | yes _ = just tt
...   | no ne = ⊥-elim (ne (trans (cong (λ j → emb-idx k (candidate k j)) n≡)
                                  (trans (cong (emb-idx k) (candidate-emb k (idx x))) (sym n≡))))

------------------------------------------------------------------------
-- pf? is complete

private
  pf?′-complete : (c : Chain Δ) (k : ℕ) (k≡ : k ≡ size c) → PF c
                → Is-just (pf?′ c k k≡)
  pf?′-complete (ε _) _ _ _ = just tt
  pf?′-complete (c ▹ (_ , e)) (suc k) eq (pf , e′ , refl)
    with pf?′ c k (cong pred eq) | pf?′-complete c k (cong pred eq) pf
       | unren (emb c) (emb⁻ c k (cong pred eq)) (ren (emb c) e′)
       | unren-complete (emb c) (emb⁻ c k (cong pred eq)) (emb⁻-complete c k (cong pred eq)) e′
  ... | just _ | _ | just _ | _ = just tt
  ... | nothing | () | _ | _
  ... | just _ | _ | nothing | ()

pf?-complete : (c : Chain Δ) → PF c → Is-just (pf? c)
pf?-complete c = pf?′-complete c (size c) refl

pf?-nothing : (c : Chain Δ) → pf? c ≡ nothing → ¬ PF c
pf?-nothing c none pf with pf? c | pf?-complete c pf
... | just _ | _ = case none
  where case : just _ ≡ nothing → _
        case ()
... | nothing | ()
