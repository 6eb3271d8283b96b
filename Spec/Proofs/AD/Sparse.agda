{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- The sparse ∇ is the dense one: dense Δ (∇ˢ (len Δ) e s t) ≡
-- ∇ e s (dense Δ t), the same expressions (Spec.Lang.AD.Sparse).
--
-- Rows: find after put, and after close-row (a shape's entry is the
-- closed body entry added to the old one).  Tries: row after modify
-- (the key's row changes, no other) and after merge (every row is the
-- rows closed and added).  Levels: the variables of a context have
-- distinct levels below its length (fromℕ is injective), so adding at
-- a variable's level is `update` at the variable, and a key at or
-- above a context's length is not seen by its dense reading.  Purely
-- syntactic: no scalar, no law.
------------------------------------------------------------------------
module Spec.Proofs.AD.Sparse where

open import Data.Empty using (⊥-elim)
open import Data.List using ([]; _∷_)
open import Data.Maybe using (just)
open import Data.Nat using (ℕ; zero; suc; _∸_; _<_; _≤_; s≤s; z≤n)
open import Data.Nat.Properties using (≤-refl; <⇒≤; <⇒≢)
open import Data.Nat.Binary using (ℕᵇ; 2[1+_]; 1+[2_]; fromℕ) renaming (zero to 0ᵇ)
open import Data.Product using (_,_)
open import Relation.Binary.PropositionalEquality
open import Relation.Nullary using (yes; no; ¬_)

open import Spec.Array.Base using (S)
open import Spec.Array.Properties using (_≟ₛ_)
open import Spec.Lang.Syntax
open import Spec.Lang.AD
open import Spec.Lang.AD.Sparse
open import Spec.Lang.Trie using (modify)
open import Spec.Proofs.Trie using (at-modify-same; at-modify-other; fromℕ-injective; level-below)

private
  variable
    Γ Δ : Ctx
    is  : IS
    s q u : S

------------------------------------------------------------------------
-- Rows

private
  ≟-refl : (s : S) → (s ≟ₛ s) ≡ yes refl
  ≟-refl s = ≡-≟-identity _≟ₛ_ refl

find-put-same : (s : S) (e : E Δ (ar s)) (r : Row Δ) → find s (put s e r) ≡ e
find-put-same s e [] rewrite ≟-refl s = refl
find-put-same s e ((s′ , e′) ∷ r) with s′ ≟ₛ s
... | yes _ rewrite ≟-refl s = refl
... | no ne = skip
  where
    skip : find s ((s′ , e′) ∷ put s e r) ≡ e
    skip with s′ ≟ₛ s
    ... | yes eq = ⊥-elim (ne eq)
    ... | no  _  = find-put-same s e r

find-put-other : (s s′ : S) (e : E Δ (ar s′)) (r : Row Δ) → ¬ s′ ≡ s → find s (put s′ e r) ≡ find s r
find-put-other s s′ e [] ne with s′ ≟ₛ s
... | yes eq = ⊥-elim (ne eq)
... | no  _  = refl
find-put-other s s′ e ((s″ , e″) ∷ r) ne with s″ ≟ₛ s′
... | yes refl = same
  where
    same : find s ((s′ , e) ∷ r) ≡ find s ((s′ , e″) ∷ r)
    same with s′ ≟ₛ s
    ... | yes eq = ⊥-elim (ne eq)
    ... | no  _  = refl
... | no  _ = next
  where
    next : find s ((s″ , e″) ∷ put s′ e r) ≡ find s ((s″ , e″) ∷ r)
    next with s″ ≟ₛ s
    ... | yes refl = refl
    ... | no  _    = find-put-other s s′ e r ne

find-close-row : (b : ∀ {q} → E (Δ ▹ ix u) (ar q) → E Δ (ar q)) (zs : Row (Δ ▹ ix u)) (r : Row Δ) (s : S)
               → find s (close-row b zs r) ≡ close b (find s zs) (find s r)
find-close-row b []             r s = refl
find-close-row b ((s′ , z) ∷ zs) r s with s′ ≟ₛ s
... | yes refl = find-put-same s _ (close-row b zs r)
... | no  ne   = trans (find-put-other s s′ _ (close-row b zs r) ne) (find-close-row b zs r s)

------------------------------------------------------------------------
-- Tries

row-merge : (b : ∀ {q} → E (Δ ▹ ix u) (ar q) → E Δ (ar q)) (T : Sparse (Δ ▹ ix u)) (t : Sparse Δ) (k : ℕᵇ)
          → row (merge b T t) k ≡ close-row b (row T k) (row t k)
row-merge b leaf         t              k        = refl
row-merge b (node z l r) leaf           0ᵇ       = refl
row-merge b (node z l r) leaf           1+[2 k ] = row-merge b l leaf k
row-merge b (node z l r) leaf           2[1+ k ] = row-merge b r leaf k
row-merge b (node z l r) (node d l′ r′) 0ᵇ       = refl
row-merge b (node z l r) (node d l′ r′) 1+[2 k ] = row-merge b l l′ k
row-merge b (node z l r) (node d l′ r′) 2[1+ k ] = row-merge b r r′ k

------------------------------------------------------------------------
-- Levels

private
  -- a variable's index is below the context's length, so its level is too
  index-below : (Γ : Ctx) (n : ℕ) → Γ ‼ n ≡ just is → n < len Γ
  index-below (Γ ▹ _) zero    p = s≤s z≤n
  index-below (Γ ▹ _) (suc n) p = s≤s (index-below Γ n p)

  below : (Γ : Ctx) (n : ℕ) → Γ ‼ n ≡ just is → len Γ ∸ suc n < len Γ
  below Γ n p = level-below (len Γ) n (index-below Γ n p)

-- a key at or above the length is not read
dense-above : (Γ : Ctx) (m : ℕ) (f : Row Δ → Row Δ) (t : Sparse Δ) → len Γ ≤ m
            → dense Γ (modify [] (fromℕ m) f t) ≡ dense Γ t
dense-above ε          m f t h = refl
dense-above (Γ ▹ ar s) m f t h =
  cong₂ _,_ (dense-above Γ m f t (<⇒≤ h))
            (cong (find s) (at-modify-other [] t (fromℕ m) (fromℕ (len Γ)) f
                              λ eq → <⇒≢ h (sym (fromℕ-injective eq))))
dense-above (Γ ▹ ix s) m f t h = dense-above Γ m f t (<⇒≤ h)

dense-leaf : (Γ : Ctx) → dense {Δ = Δ} Γ leaf ≡ env-zero {Γ}
dense-leaf ε          = refl
dense-leaf (Γ ▹ ar s) = cong (_, zero) (dense-leaf Γ)
dense-leaf (Γ ▹ ix s) = dense-leaf Γ

-- reading a variable's entry
lookup-dense : (Γ : Ctx) (x : ar q ∈ Γ) (t : Sparse Δ)
             → get (fromℕ (len Γ ∸ suc (idx x))) q t ≡ lookupE (dense Γ t) x
lookup-dense (Γ ▹ ar _) (var# zero    refl) t = refl
lookup-dense (Γ ▹ ar _) (var# (suc n) p)    t = lookup-dense Γ (var# n p) t
lookup-dense (Γ ▹ ix _) (var# (suc n) p)    t = lookup-dense Γ (var# n p) t

-- adding at a variable's level is update at the variable
dense-add : (Γ : Ctx) (x : ar q ∈ Γ) (sd : E Δ (ar q)) (t : Sparse Δ)
          → dense Γ (add (fromℕ (len Γ ∸ suc (idx x))) q sd t) ≡ update (dense Γ t) x (_⊞ sd)
dense-add (Γ ▹ ar q) (var# zero refl) sd t =
  cong₂ _,_ (dense-above Γ (len Γ) _ t ≤-refl)
            (trans (cong (find q) (at-modify-same [] t (fromℕ (len Γ)) _))
                   (find-put-same q _ (row t (fromℕ (len Γ)))))
dense-add (Γ ▹ ar s) (var# (suc n) p) sd t =
  cong₂ _,_ (dense-add Γ (var# n p) sd t)
            (cong (find s) (at-modify-other [] t _ (fromℕ (len Γ)) _
                              λ eq → <⇒≢ (below Γ n p) (fromℕ-injective eq)))
dense-add (Γ ▹ ix _) (var# (suc n) p) sd t = dense-add Γ (var# n p) sd t

-- merging a body's environment is closing its entries and adding them
dense-merge : (Γ : Ctx) (b : ∀ {q} → E (Δ ▹ ix u) (ar q) → E Δ (ar q)) (T : Sparse (Δ ▹ ix u)) (t : Sparse Δ)
            → dense Γ (merge b T t) ≡ env-zipWith {Γ = Γ} (close b) (dense Γ T) (dense Γ t)
dense-merge ε          b T t = refl
dense-merge (Γ ▹ ar s) b T t =
  cong₂ _,_ (dense-merge Γ b T t)
            (trans (cong (find s) (row-merge b T t (fromℕ (len Γ))))
                   (find-close-row b (row T (fromℕ (len Γ))) (row t (fromℕ (len Γ))) s))
dense-merge (Γ ▹ ix s) b T t = dense-merge Γ b T t

------------------------------------------------------------------------
-- The derivative

∇ˢ-dense : (e sd : E Δ is) (t : Sparse Δ) → dense Δ (∇ˢ (len Δ) e sd t) ≡ ∇ e sd (dense Δ t)

private
  bind-dense : (b : ∀ {q} → E (Δ ▹ ix u) (ar q) → E Δ (ar q)) (e sd : E (Δ ▹ ix u) is) (t : Sparse Δ)
             → dense Δ (bindˢ (len Δ) b e sd t) ≡ map-bind b e sd (dense Δ t)
  bind-dense {Δ = Δ} {u = u} b e sd t =
    trans (dense-merge Δ b (∇ˢ (suc (len Δ)) e sd leaf) t)
          (cong (λ z → env-zipWith {Γ = Δ} (close b) z (dense Δ t))
                (trans (∇ˢ-dense e sd leaf) (cong (∇ e sd) (dense-leaf (Δ ▹ ix u)))))

∇ˢ-dense (var {is = ix _} x)     sd t = refl
∇ˢ-dense {Δ = Δ} (var {is = ar q} x) sd t = dense-add Δ x sd t
∇ˢ-dense zero                    sd t = refl
∇ˢ-dense one                     sd t = refl
∇ˢ-dense (imaps e)               sd t = bind-dense sum e _ t
∇ˢ-dense (sels e i)              sd t = ∇ˢ-dense e _ t
∇ˢ-dense (imap e)                sd t = bind-dense sum e _ t
∇ˢ-dense (sel e i)               sd t = ∇ˢ-dense e _ t
∇ˢ-dense (imapb m e)             sd t = bind-dense sum e _ t
∇ˢ-dense (selb m e i)            sd t = ∇ˢ-dense e _ t
∇ˢ-dense (sum e)                 sd t = bind-dense sum e _ t
∇ˢ-dense (zero-but i j e)        sd t = ∇ˢ-dense e _ t
∇ˢ-dense (slide i sp e su)       sd t = ∇ˢ-dense e _ t
∇ˢ-dense (backslide i e su sp)   sd t = ∇ˢ-dense e _ t
∇ˢ-dense (logistic e)            sd t = ∇ˢ-dense e _ t
∇ˢ-dense (un Fn.step e)          sd t = refl
∇ˢ-dense (un Fn.detach e)        sd t = refl
∇ˢ-dense (un Fn.exp e)                 sd t = ∇ˢ-dense e _ t
∇ˢ-dense (un Fn.log e)                 sd t = ∇ˢ-dense e _ t
∇ˢ-dense (un Fn.recip e)               sd t = ∇ˢ-dense e _ t
∇ˢ-dense (un Fn.sqrt e)                sd t = ∇ˢ-dense e _ t
∇ˢ-dense (un Fn.relu e)                sd t = ∇ˢ-dense e _ t
∇ˢ-dense (un Fn.erf e)                 sd t = ∇ˢ-dense e _ t
∇ˢ-dense (un Fn.derf e)                sd t = ∇ˢ-dense e _ t
∇ˢ-dense (e ⊞ e₁)                sd t = trans (∇ˢ-dense e sd _) (cong (∇ e sd) (∇ˢ-dense e₁ sd t))
∇ˢ-dense (e ⊠ e₁)                sd t = trans (∇ˢ-dense e _ _) (cong (∇ e _) (∇ˢ-dense e₁ _ t))
∇ˢ-dense (e ⊔ e₁)                sd t = trans (∇ˢ-dense e _ _) (cong (∇ e _) (∇ˢ-dense e₁ _ t))
∇ˢ-dense (scaledown k e)         sd t = ∇ˢ-dense e _ t
∇ˢ-dense (minus e)               sd t = ∇ˢ-dense e _ t
∇ˢ-dense (ix-const i)            sd t = refl
∇ˢ-dense (div m i)               sd t = refl
∇ˢ-dense (mod m i)               sd t = refl
∇ˢ-dense (ix-plus i j su sp)     sd t = refl
∇ˢ-dense (argmax w e)            sd t = refl
∇ˢ-dense (ix-minus i j sp su e)  sd t = bind-dense (ix-minus i j sp su) e _ t
∇ˢ-dense (ix-minusᵣ i j sp su e) sd t = bind-dense (ix-minusᵣ i j sp su) e _ t
