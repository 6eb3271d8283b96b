{-# OPTIONS --guardedness #-}
------------------------------------------------------------------------
-- The executable entry point of the specification (not --safe: IO).
--
--   Main dump MODEL      the expression dump of MODEL (cnn, dot, chain, ops)
--                        as JSON on stdout (docs/dump-format.md)
--   Main model FILE      the expression dump of the model file FILE (`-`:
--                        standard input; docs/model-format.md), elaborated
--                        by Spec.Front.Model; a model that does not
--                        elaborate prints one line, FILE:LINE: message,
--                        on stderr and exits with status 1
--   Main check-forward   the CNN's prediction on a fixed input, computed
--                        twice in Float: by the array-level `forward` of
--                        Spec.CNN.Array and by evaluating the cnn chain
--                        binding by binding; prints both, the chain's
--                        loss and the input as JSON (tests/test_spec.py
--                        compares them).  Arrays are functions, so
--                        both tabulate each layer once (Spec.Array.Memo):
--                        the network as forward-via memo, proved equal to
--                        forward (Spec.Proofs.CNN.Via), the chain binding
--                        by binding; without it the network recomputed
--                        every layer for every use (135 s instead of a
--                        second).
--
-- Bad usage or an unknown model prints the usage and the known models
-- on stderr and exits with status 2.  The standard library (1.7.1) has
-- no handle for stderr, so it is written through /dev/stderr.
------------------------------------------------------------------------
module Spec.Main where

open import Data.Bool using (if_then_else_)
open import Data.Fin as F using ()
open import Data.Float as Float using (Float)
open import Data.List as List using (List; []; _∷_)
open import Data.Maybe using (Maybe; just; nothing)
open import Data.Nat as ℕ using (ℕ)
open import Data.Nat.DivMod using (_%_)
open import Data.Product using (_×_; _,_; proj₁)
open import Data.String as String using (String; _++_)
open import Data.Unit.Polymorphic using (⊤)
open import Function using (_$_; _∘_)
open import IO
import IO.Infinite
import Codata.Musical.Colist as Colist
import Data.Vec.Bounded as Vec≤
open import Level using (0ℓ)
open import Relation.Binary.PropositionalEquality using (_≡_; refl)
open import System.Environment using (getArgs)
open import System.Exit using (exitWith; ExitFailure)

open import Spec.Array.Base using (S; ι; _⊗_; P; Ar; ∣_∣; nest; unnest)
open import Spec.Array.Memo using (memo)
open import Spec.Scalar.Float using (float)
open import Spec.Dump.JSON
open import Spec.Dump.Model using (models) renaming (dump to dump-json)
open import Spec.Front.Result using (ok; fail)
open import Spec.Front.Model using (Elaborated; elaborate)
open import Spec.Lang.Syntax using (Ctx; ε; _▹_; ar; E; v₀; v₂; one)
open import Spec.Lang.Chain using (Chain; ε; _▹_)
open import Spec.Lang.Eval float using (Env; ⟦_⟧; lookup)
import Spec.CNN.Array float as CNN
import Spec.Model.CNN as Model

private
  variable
    s p : S
    X   : Set
    Γ Δ : Ctx

------------------------------------------------------------------------
-- Arrays as flat lists, row-major

positions : (s : S) → List (P s)
positions (ι n)   = List.map ι (List.allFin n)
positions (s ⊗ p) = List.concatMap (λ i → List.map (i ⊗_) (positions p)) (positions s)

toList : Ar s X → List X
toList {s = s} a = List.map a (positions s)

flat : P s → ℕ
flat (ι i)           = F.toℕ i
flat {s = _ ⊗ p} (i ⊗ j) = flat i ℕ.* ∣ p ∣ ℕ.+ flat j

floats : Ar s Float → JSON
floats = array ∘ List.map num ∘ toList

-- Deterministic test data in [-0.5, 0.5): a fixed scramble of the flat
-- position and a per-array salt.
fill : ℕ → Ar s Float
fill salt i = Float.fromℕ ((flat i ℕ.* 7919 ℕ.+ salt ℕ.* 104729) % 1000) Float.÷ 1000.0
              Float.- 0.5

------------------------------------------------------------------------
-- Running a chain forward

-- The base context of a chain.
Base : Chain Γ → Ctx
Base {Γ} (ε _) = Γ
Base (c ▹ _)   = Base c

-- A binding's value (tabulated) after a zero placeholder for its
-- derivative.  (A separate function, not a `let`, so that the
-- environment is shared and not recomputed.)
extend : Env Δ → E Δ (ar p) → Env (Δ ▹ ar p ▹ ar p)
extend ρ e = (ρ , (λ _ → 0.0)) , memo (⟦ e ⟧ ρ)

run-chain : (c : Chain Γ) → Env (Base c) → Env Γ
run-chain (ε _)         ρ = ρ
run-chain (c ▹ (_ , e)) ρ = extend (run-chain c ρ) e

------------------------------------------------------------------------
-- Commands

known : String
known = String.intersperse ", " (List.map proj₁ models)

usage : IO {0ℓ} ⊤
usage = do
  appendFile "/dev/stderr" $
    "usage: Main dump MODEL | Main model FILE | Main check-forward\nknown models: " ++ known ++ "\n"
  exitWith (ExitFailure 2)

lookupModel : String → List (String × JSON) → Maybe JSON
lookupModel m []             = nothing
lookupModel m ((n , j) ∷ ms) = if n String.== m then just j else lookupModel m ms

dump : String → IO {0ℓ} ⊤
dump m with lookupModel m models
... | just j  = putStrLn (render j)
... | nothing = do
  appendFile "/dev/stderr" ("unknown model: " ++ m ++ "\n")
  usage

-- A model file, elaborated and dumped.
model-dump : Elaborated → JSON
model-dump m = dump-json title (features List.++ targets) constants roles chain one outputs
  where
    open Elaborated m
    one-of : String → List String → List (String × String)
    one-of k (x ∷ []) = (k , x) ∷ []
    one-of k _        = []
    roles = one-of "features" features List.++ one-of "target" targets
    outputs = (case prediction of λ { (just x) → ("prediction" , x) ∷ [] ; nothing → [] })
              List.++ (("loss" , objective) ∷ [])
      where case_of_ : ∀ {A B : Set} → A → (A → B) → B
            case x of f = f x

-- Standard input, which may be a pipe (readFiniteFile needs a file
-- whose size is known): the first 16 MiB characters of the lazy stream.
getStdin : IO {0ℓ} String
getStdin = do
  cs ← IO.Infinite.getContents
  pure (String.fromList (Vec≤.toList (Colist.take 16777216 cs)))

modelFile : String → IO {0ℓ} ⊤
modelFile file = do
  text ← (if file String.== "-" then getStdin else readFiniteFile file)
  report (elaborate text)
  where
    report : _ → IO {0ℓ} ⊤
    report (ok m)   = putStrLn (render (model-dump m))
    report (fail e) = do
      appendFile "/dev/stderr" (file ++ ":" ++ e ++ "\n")
      exitWith (ExitFailure 1)

-- The fixed input of check-forward, in context order.
target : Ar CNN.Out Float
inp    : Ar CNN.Inp Float
k₁     : Ar CNN.K₁ Float
b₁     : Ar CNN.B₁ Float
k₂     : Ar CNN.K₂ Float
b₂     : Ar CNN.B₂ Float
fc     : Ar CNN.FC Float
b      : Ar CNN.B Float
target = fill {s = CNN.Out} 1
inp    = fill {s = CNN.Inp} 2
k₁     = fill {s = CNN.K₁} 3
b₁     = fill {s = CNN.B₁} 4
k₂     = fill {s = CNN.K₂} 5
b₂     = fill {s = CNN.B₂} 6
fc     = fill {s = CNN.FC} 7
b      = fill {s = CNN.B} 8

base : Env Model.Γ
base = ((((((((_ , target) , inp) , k₁) , b₁) , k₂) , b₂) , fc) , b)

inputs : JSON
inputs = object (("target" , floats target) ∷ ("inp" , floats inp) ∷ ("k1" , floats k₁)
               ∷ ("b1" , floats b₁) ∷ ("k2" , floats k₂) ∷ ("b2" , floats b₂)
               ∷ ("fc" , floats fc) ∷ ("b" , floats b) ∷ [])

-- Every binding of the cnn chain (and a zero for each placeholder).
chain-values : Env Model.Φ
chain-values = run-chain Model.chain base

-- The array-level network with each layer tabulated once: forward-via
-- memo, which is forward at every position (Spec.Theorems.forward-via-≗
-- and memo-≗), written out here (refl below) so that the compiled
-- program applies memo itself.
forward-memo : Ar CNN.Out Float
forward-memo =
  memo (CNN.r-of (memo (CNN.s₂-of (memo (CNN.c₂-of (memo (CNN.s₁-of (memo (CNN.c₁-of
    inp k₁ b₁)))) k₂ b₂)))) fc b)

_ : forward-memo ≡ CNN.forward-via memo inp k₁ b₁ k₂ b₂ fc b
_ = refl

checkForward : IO {0ℓ} ⊤
checkForward = putStrLn $ render $ object
  ( ("inputs"  , inputs)
  ∷ ("forward" , floats forward-memo)
  ∷ ("chain"   , floats (lookup v₂ chain-values))     -- r
  ∷ ("loss"    , floats (lookup v₀ chain-values))     -- loss
  ∷ [])

main : Main
main = run $ do
  args ← getArgs
  go args
  where
    go : List String → IO {0ℓ} ⊤
    go ("dump" ∷ m ∷ []) = dump m
    go ("model" ∷ f ∷ []) = modelFile f
    go ("check-forward" ∷ []) = checkForward
    go _ = usage
