{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- From what the user wrote to a core term: names become de Bruijn
-- indices, `a - b` becomes a + (−b), operations written as calls
-- become their nodes, and layers are expanded (Spec.Front.Layers) once
-- the shapes of their arguments are inferred (Spec.Front.Check).
--
-- The scope holds the names of the context's variables, innermost
-- first; a derivative placeholder of the chain has the empty name,
-- which no one can write, so a binding never mentions one.  It keeps
-- them as a list (for messages) and as a map from each name to the
-- level (the position counted from the outermost) of its innermost
-- variable, so resolving a name costs its length, not the size of the
-- scope (Spec.Front.Names): the index is the depth minus one minus the
-- level.
--
--   for i : 10 . a[i] - b[i]   (scope b, a)
--   ↦ For 10 (Add (Sel (V 2) (V 0)) (Neg (Sel (V 1) (V 0))))
------------------------------------------------------------------------
module Spec.Front.Expand where

open import Data.Bool using (true; false; not; if_then_else_)
open import Data.List as List using (List; []; _∷_)
open import Data.Maybe using (Maybe; just; nothing)
open import Data.Nat using (ℕ; zero; suc; _∸_)
open import Data.Nat.Show using () renaming (show to showℕ)
open import Data.Product using (_,_)
open import Data.String as String using (String; _++_)

open import Spec.Array.Base using (S)
open import Spec.Lang.Syntax using (Ctx; _▹_; ix; Fn; fn-name; fns)
open import Spec.Front.Syntax
open import Spec.Front.Term
open import Spec.Front.Result
open import Spec.Front.Names as Names using (NameMap; _==_)
open import Spec.Front.Shape using (show)
open import Spec.Front.Check using (infer)
open import Spec.Front.Sorts using (Sorts; _▸ˢ_)
open import Spec.Front.Layers using (Arg; expr; nat; layer; layer-names)
open import Spec.Front.Literal using (Decimal; literal; number)

record Scope : Set where
  constructor scope
  field
    names : List String       -- innermost first
    depth : ℕ                 -- how many
    level : NameMap ℕ         -- each name's innermost level

open Scope public using (names)

empty-scope : Scope
empty-scope = scope [] 0 Names.empty

-- one more variable, innermost
push : String → Scope → Scope
push x (scope ns d m) = scope (x ∷ ns) (suc d) (Names.insert x d m)

-- the scope of the names, outermost first
scope-of : List String → Scope
scope-of = List.foldl (λ sc x → push x sc) empty-scope

private
  -- The index of the innermost variable of that name.
  resolve : Scope → String → Maybe ℕ
  resolve (scope _ d m) x with Names.find x m
  ... | just l  = just (d ∸ suc l)
  ... | nothing = nothing

  visible : Scope → String
  visible sc = String.intersperse ", " (List.reverse (List.boolFilter (λ x → not (x == "")) (names sc)))

  argName : ℕ → Raw → String
  argName k (name x) = x
  argName k _        = "(argument " ++ showℕ k ++ ")"

operations : List String
operations = List.map fn-name fns
  List.++ "max" ∷ "slide" ∷ "backslide" ∷ "block" ∷ "zerobut" ∷ "div" ∷ "mod" ∷ layer-names

expand : (Γ : Ctx) → Sorts Γ → Scope → Raw → Result Tm
expand-args : (Γ : Ctx) → Sorts Γ → Scope → String → ℕ → List Raw → Result (List Arg)
builtin : (Γ : Ctx) → Sorts Γ → Scope → String → List Raw → Result Tm
block-shape : String → List Raw → Result S

expand Γ σ sc (name x) with resolve sc x
... | just n  = ok (V n)
... | nothing = fail ("unknown name " ++ x ++ "; in scope: " ++ visible sc)
expand Γ σ sc (num n)             = number n
expand Γ σ sc (dec d)             = literal d
expand Γ σ sc (shape s)           = fail ("the shape " ++ show s ++ " is not an array")
expand Γ σ sc (bind for i s b)    = expand (Γ ▹ ix s) (σ ▸ˢ ix s) (push i sc) b >>= λ t → ok (For s t)
expand Γ σ sc (bind sum i s b)    = expand (Γ ▹ ix s) (σ ▸ˢ ix s) (push i sc) b >>= λ t → ok (Sum s t)
expand Γ σ sc (bind tile i s b)   = expand (Γ ▹ ix s) (σ ▸ˢ ix s) (push i sc) b >>= λ t → ok (Tile s t)
expand Γ σ sc (bind maxr i s b)   = expand (Γ ▹ ix s) (σ ▸ˢ ix s) (push i sc) b >>= λ t → ok (MaxOver s t)
expand Γ σ sc (sel a (num n)) =
  fail ("[" ++ showℕ n ++ "]: an index is an index variable (the i of for i : S . a[i]), "
        ++ "not a number")
expand Γ σ sc (sel a (dec d)) =
  fail ("[" ++ Decimal.text d ++ "]: an index is an index variable (the i of for i : S . a[i]), "
        ++ "not a number")
expand Γ σ sc (sel a i)   = expand Γ σ sc a >>= λ a′ → expand Γ σ sc i >>= λ i′ → ok (Sel a′ i′)
expand Γ σ sc (add a b)   = expand Γ σ sc a >>= λ a′ → expand Γ σ sc b >>= λ b′ → ok (Add a′ b′)
expand Γ σ sc (sub a b)   = expand Γ σ sc a >>= λ a′ → expand Γ σ sc b >>= λ b′ → ok (Add a′ (Neg b′))
expand Γ σ sc (mul a b)   = expand Γ σ sc a >>= λ a′ → expand Γ σ sc b >>= λ b′ → ok (Mul a′ b′)
expand Γ σ sc (neg a)     = expand Γ σ sc a >>= λ a′ → ok (Neg a′)
expand Γ σ sc (scale n a) = expand Γ σ sc a >>= λ a′ → ok (Scale n a′)
expand Γ σ sc (call f as) with layer f
... | just L  = expand-args Γ σ sc f 1 as >>= L
... | nothing = builtin Γ σ sc f as

expand-args Γ σ sc f k [] = ok []
expand-args Γ σ sc f k (num n ∷ as) =
  expand-args Γ σ sc f (suc k) as >>= λ rest → ok (nat n (showℕ n) ∷ rest)
-- a decimal has no shape of its own, and a layer takes arrays and whole numbers
expand-args Γ σ sc f k (dec d ∷ as) =
  fail (f ++ ": argument " ++ showℕ k ++ " is the number " ++ Decimal.text d ++ "; a layer takes "
        ++ "arrays (a number in one, as x * " ++ Decimal.text d ++ ", takes its shape) and whole numbers")
expand-args Γ σ sc f k (a ∷ as) = do
  t ← expand Γ σ sc a
  (is , _) ← infer Γ σ t
  rest ← expand-args Γ σ sc f (suc k) as
  ok (expr t is (argName k a) ∷ rest)

builtin Γ σ sc "logistic" (a ∷ []) = expand Γ σ sc a >>= λ a′ → ok (Un Fn.logistic a′)
builtin Γ σ sc "exp"      (a ∷ []) = expand Γ σ sc a >>= λ a′ → ok (Un Fn.exp a′)
builtin Γ σ sc "log"      (a ∷ []) = expand Γ σ sc a >>= λ a′ → ok (Un Fn.log a′)
builtin Γ σ sc "recip"    (a ∷ []) = expand Γ σ sc a >>= λ a′ → ok (Un Fn.recip a′)
builtin Γ σ sc "sqrt"     (a ∷ []) = expand Γ σ sc a >>= λ a′ → ok (Un Fn.sqrt a′)
builtin Γ σ sc "relu"     (a ∷ []) = expand Γ σ sc a >>= λ a′ → ok (Un Fn.relu a′)
builtin Γ σ sc "step"     (a ∷ []) = expand Γ σ sc a >>= λ a′ → ok (Un Fn.step a′)
builtin Γ σ sc "detach"   (a ∷ []) = expand Γ σ sc a >>= λ a′ → ok (Un Fn.detach a′)
builtin Γ σ sc "erf"      (a ∷ []) = expand Γ σ sc a >>= λ a′ → ok (Un Fn.erf a′)
builtin Γ σ sc "derf"     (a ∷ []) = expand Γ σ sc a >>= λ a′ → ok (Un Fn.derf a′)
builtin Γ σ sc "max" (a ∷ b ∷ []) =
  expand Γ σ sc a >>= λ a′ → expand Γ σ sc b >>= λ b′ → ok (Max a′ b′)
builtin Γ σ sc "slide" (a ∷ i ∷ []) =
  expand Γ σ sc a >>= λ a′ → expand Γ σ sc i >>= λ i′ → ok (Slide i′ a′)
builtin Γ σ sc "backslide" (a ∷ i ∷ []) =
  expand Γ σ sc a >>= λ a′ → expand Γ σ sc i >>= λ i′ → ok (Backslide i′ a′)
builtin Γ σ sc "block" (a ∷ i ∷ []) =
  expand Γ σ sc a >>= λ a′ → expand Γ σ sc i >>= λ i′ → ok (Block a′ i′)
builtin Γ σ sc "zerobut" (i ∷ j ∷ a ∷ []) =
  expand Γ σ sc i >>= λ i′ → expand Γ σ sc j >>= λ j′ → expand Γ σ sc a >>= λ a′ → ok (ZeroBut i′ j′ a′)
builtin Γ σ sc "div" (i ∷ p ∷ []) =
  expand Γ σ sc i >>= λ i′ → block-shape "div" (p ∷ []) >>= λ s → ok (Div s i′)
builtin Γ σ sc "mod" (i ∷ p ∷ []) =
  expand Γ σ sc i >>= λ i′ → block-shape "mod" (p ∷ []) >>= λ s → ok (Mod s i′)
builtin Γ σ sc f as with List.any (f ==_) operations
... | true  = fail (f ++ ": wrong number of arguments (" ++ showℕ (List.length as) ++ ")")
... | false = fail ("unknown operation " ++ f ++ "; known: " ++ String.intersperse ", " operations)

block-shape f (shape s ∷ [])          = ok s
block-shape f (num n ∷ [])            = ok (Spec.Array.Base.ι n)
  where import Spec.Array.Base
block-shape f _ = fail (f ++ ": the second argument must be a shape, such as 2x2")
