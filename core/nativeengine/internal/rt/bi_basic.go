package rt

import (
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"
)

// Built-in functions: comparison, types, numbers, aggregates. Each mirrors OPA's topdown
// implementation of the same name; an operand of the wrong type is undefined (OPA's
// non-strict built-in errors). The //rego:builtin lines are what internal/nativegen
// reads to know what the runtime implements.

//rego:builtin equal
func (ev *Eval) BiEqual(a, b *V) *V { return Bool(Equal(a, b)) }

//rego:builtin neq
func (ev *Eval) BiNeq(a, b *V) *V { return Bool(!Equal(a, b)) }

//rego:builtin gt
func (ev *Eval) BiGt(a, b *V) *V { return Bool(Compare(a, b) > 0) }

//rego:builtin gte
func (ev *Eval) BiGte(a, b *V) *V { return Bool(Compare(a, b) >= 0) }

//rego:builtin lt
func (ev *Eval) BiLt(a, b *V) *V { return Bool(Compare(a, b) < 0) }

//rego:builtin lte
func (ev *Eval) BiLte(a, b *V) *V { return Bool(Compare(a, b) <= 0) }

//rego:builtin is_number
func (ev *Eval) BiIsNumber(a *V) *V { return isKind(a, KNum) }

//rego:builtin is_string
func (ev *Eval) BiIsString(a *V) *V { return isKind(a, KStr) }

//rego:builtin is_boolean
func (ev *Eval) BiIsBoolean(a *V) *V { return isKind(a, KBool) }

//rego:builtin is_array
func (ev *Eval) BiIsArray(a *V) *V { return isKind(a, KArr) }

//rego:builtin is_set
func (ev *Eval) BiIsSet(a *V) *V { return isKind(a, KSet) }

//rego:builtin is_object
func (ev *Eval) BiIsObject(a *V) *V { return isKind(a, KObj) }

//rego:builtin is_null
func (ev *Eval) BiIsNull(a *V) *V { return isKind(a, KNull) }

// isKind is the is_* built-ins.
func isKind(a *V, k Kind) *V {
	if a == nil {
		return nil
	}
	return Bool(a.k == k)
}

var typeNames = [...]string{KNull: "null", KBool: "boolean", KNum: "number", KStr: "string", KArr: "array", KObj: "object", KSet: "set"}

//rego:builtin type_name
func (ev *Eval) BiTypeName(a *V) *V {
	if a == nil {
		return nil
	}
	return ev.String(typeNames[a.k])
}

//rego:builtin count
func (ev *Eval) BiCount(a *V) *V {
	switch a.Kind() {
	case KArr, KObj, KSet:
		return ev.Int(int64(len(a.a)))
	case KStr:
		return ev.Int(int64(len([]rune(a.s))))
	}
	return nil
}

//rego:builtin internal.member_2
func (ev *Eval) BiMember2(x, c *V) *V {
	if x == nil || c == nil {
		return nil
	}
	switch c.k {
	case KSet:
		_, ok := search(c.a, x)
		return Bool(ok)
	case KArr:
		for _, e := range c.a {
			if Equal(x, e) {
				return True
			}
		}
	case KObj:
		for _, e := range c.o {
			if Equal(x, e) {
				return True
			}
		}
	}
	return False
}

//rego:builtin internal.member_3
func (ev *Eval) BiMember3(k, v, c *V) *V {
	if k == nil || v == nil || c == nil {
		return nil
	}
	switch c.k {
	case KSet:
		_, ok := search(c.a, k)
		return Bool(ok && Equal(k, v))
	case KArr, KObj:
		return Bool(Equal(v, Dot(c, k)))
	}
	return False
}

//rego:builtin plus
func (ev *Eval) BiPlus(a, b *V) *V { return ev.Plus(a, b) }

//rego:builtin minus
func (ev *Eval) BiMinus(a, b *V) *V { return ev.minus(a, b) }

//rego:builtin mul
func (ev *Eval) BiMul(a, b *V) *V { return ev.Mul(a, b) }

//rego:builtin div
func (ev *Eval) BiDiv(a, b *V) *V { return ev.Div(a, b) }

//rego:builtin rem
func (ev *Eval) BiRem(a, b *V) *V { return ev.Rem(a, b) }

//rego:builtin abs
func (ev *Eval) BiAbs(a *V) *V { return ev.Abs(a) }

//rego:builtin round
func (ev *Eval) BiRound(a *V) *V { return ev.Round(a) }

//rego:builtin ceil
func (ev *Eval) BiCeil(a *V) *V { return ev.Ceil(a) }

//rego:builtin floor
func (ev *Eval) BiFloor(a *V) *V { return ev.Floor(a) }

// bigIntOperand is builtins.BigIntOperand.
func bigIntOperand(v *V) (*big.Int, bool) {
	if v == nil || v.k != KNum {
		return nil, false
	}
	return toBigInt(v)
}

//rego:builtin numbers.range
func (ev *Eval) BiNumbersRange(a, b *V) *V {
	return ev.numbersRange(a, b, IntConst(1))
}

//rego:builtin numbers.range_step
func (ev *Eval) BiNumbersRangeStep(a, b, step *V) *V {
	s, ok := bigIntOperand(step)
	if !ok || s.Sign() <= 0 {
		return nil
	}
	return ev.numbersRange(a, b, step)
}

func (ev *Eval) numbersRange(a, b, step *V) *V {
	x, ok1 := bigIntOperand(a)
	y, ok2 := bigIntOperand(b)
	s, ok3 := bigIntOperand(step)
	if !ok1 || !ok2 || !ok3 || s.Sign() <= 0 {
		return nil
	}
	out := ev.Array(0)
	up := x.Cmp(y) <= 0
	if x.IsInt64() && y.IsInt64() && s.IsInt64() {
		i, j, st := x.Int64(), y.Int64(), s.Int64()
		for n := 0; (up && i <= j) || (!up && i >= j); n++ {
			if n&1023 == 1023 {
				ev.Check()
			}
			out.a = append(out.a, ev.Int(i))
			next := i + st
			if !up {
				next = i - st
			}
			if (up && next < i) || (!up && next > i) { // overflow: past the end
				break
			}
			i = next
		}
		return out
	}
	for i, n := new(big.Int).Set(x), 0; ; n++ {
		if n&1023 == 1023 {
			ev.Check()
		}
		if (up && i.Cmp(y) > 0) || (!up && i.Cmp(y) < 0) {
			break
		}
		out.a = append(out.a, ev.fromBigInt(new(big.Int).Set(i)))
		if up {
			i.Add(i, s)
		} else {
			i.Sub(i, s)
		}
	}
	return out
}

//rego:builtin to_number
func (ev *Eval) BiToNumber(a *V) *V {
	switch a.Kind() {
	case KNull:
		return ev.Int(0)
	case KBool:
		return ev.Int(a.n)
	case KNum:
		return a
	case KStr:
		s := a.s
		if n, ok := plainInt(s); ok && n >= -1 && n <= 512 {
			return ev.Int(n)
		}
		low := strings.ToLower(strings.TrimLeft(s, "+-"))
		if low == "inf" || low == "infinity" || low == "nan" {
			return nil
		}
		if _, err := strconv.ParseFloat(s, 64); err != nil {
			return nil
		}
		if !numberChecked(s) {
			return nil
		}
		return ev.numText(s)
	}
	return nil
}

// numberChecked is ast.NumberChecked: numbers whose binary exponent exceeds ±1e5 are
// refused.
func numberChecked(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i]|0x20 == 'e' {
			exp, err := strconv.Atoi(s[i+1:])
			if err == nil && i+max(exp, -exp) <= 1e5/4 {
				return true
			}
			f, ok := new(big.Float).SetString(s)
			if !ok {
				return false
			}
			e := f.MantExp(nil)
			return e <= 1e5 && e >= -1e5 && !f.IsInf()
		}
	}
	return true
}

func (ev *Eval) elems(a *V) ([]*V, bool) {
	switch a.Kind() {
	case KArr, KSet:
		return a.a, true
	}
	return nil, false
}

//rego:builtin sum
func (ev *Eval) BiSum(a *V) *V {
	xs, ok := ev.elems(a)
	if !ok {
		return nil
	}
	var is int64
	fast := true
	for _, x := range xs {
		if x.k != KNum {
			fast = false
			break
		}
		i, ok := numInt64(x)
		if !ok {
			fast = false
			break
		}
		s := is + i
		if (i > 0 && s < is) || (i < 0 && s > is) {
			fast = false
			break
		}
		is = s
	}
	if fast {
		return ev.Int(is)
	}
	if r, ok := exactAccumulate(xs, 0, (*big.Int).Add); ok {
		return ev.fromBigInt(r)
	}
	sum := new(big.Float)
	for _, x := range xs {
		if x.k != KNum {
			return nil
		}
		sum.Add(sum, toBigFloat(x))
	}
	return ev.fromBigFloat(sum)
}

//rego:builtin product
func (ev *Eval) BiProduct(a *V) *V {
	xs, ok := ev.elems(a)
	if !ok {
		return nil
	}
	if r, ok := exactAccumulate(xs, 1, (*big.Int).Mul); ok {
		return ev.fromBigInt(r)
	}
	p := big.NewFloat(1)
	for _, x := range xs {
		if x.k != KNum {
			return nil
		}
		p.Mul(p, toBigFloat(x))
	}
	return ev.fromBigFloat(p)
}

func exactAccumulate(xs []*V, init int64, op func(z, x, y *big.Int) *big.Int) (*big.Int, bool) {
	acc := big.NewInt(init)
	for _, x := range xs {
		if x.k != KNum {
			return nil, false
		}
		i, ok := toBigInt(x)
		if !ok {
			return nil, false
		}
		op(acc, acc, i)
	}
	return acc, true
}

//rego:builtin max
func (ev *Eval) BiMax(a *V) *V {
	xs, ok := ev.elems(a)
	if !ok || len(xs) == 0 {
		return nil
	}
	if a.k == KSet {
		return xs[len(xs)-1]
	}
	m := Null
	for _, x := range xs {
		if Compare(m, x) <= 0 {
			m = x
		}
	}
	return m
}

//rego:builtin min
func (ev *Eval) BiMin(a *V) *V {
	xs, ok := ev.elems(a)
	if !ok || len(xs) == 0 {
		return nil
	}
	if a.k == KSet {
		return xs[0]
	}
	m := xs[0]
	for _, x := range xs {
		if Compare(m, x) >= 0 {
			m = x
		}
	}
	return m
}

//rego:builtin sort
func (ev *Eval) BiSort(a *V) *V {
	xs, ok := ev.elems(a)
	if !ok {
		return nil
	}
	out := ev.Array(len(xs))
	out.a = append(out.a, xs...)
	if a.k == KArr {
		slices.SortFunc(out.a, Compare)
	}
	return out
}

//rego:builtin all
func (ev *Eval) BiAll(a *V) *V { return ev.quantify(a, false) }

//rego:builtin any
func (ev *Eval) BiAny(a *V) *V { return ev.quantify(a, true) }

// quantify is any (stop true: true at the first true member) and all (stop false: false
// at the first member that is not true) over an array or set.
func (ev *Eval) quantify(a *V, stop bool) *V {
	xs, ok := ev.elems(a)
	if !ok {
		return nil
	}
	for _, x := range xs {
		if IsTrue(x) == stop {
			return Bool(stop)
		}
	}
	return Bool(!stop)
}

func (ev *Eval) bits2(a, b *V, f func(z, x, y *big.Int) *big.Int) *V {
	x, ok1 := bigIntOperand(a)
	y, ok2 := bigIntOperand(b)
	if !ok1 || !ok2 {
		return nil
	}
	return ev.fromBigInt(f(new(big.Int), x, y))
}

//rego:builtin bits.or
func (ev *Eval) BiBitsOr(a, b *V) *V { return ev.bits2(a, b, (*big.Int).Or) }

//rego:builtin bits.and
func (ev *Eval) BiBitsAnd(a, b *V) *V { return ev.bits2(a, b, (*big.Int).And) }

//rego:builtin bits.xor
func (ev *Eval) BiBitsXor(a, b *V) *V { return ev.bits2(a, b, (*big.Int).Xor) }

//rego:builtin bits.negate
func (ev *Eval) BiBitsNegate(a *V) *V {
	x, ok := bigIntOperand(a)
	if !ok {
		return nil
	}
	return ev.fromBigInt(new(big.Int).Not(x))
}

// maxShift bounds a shift: topdown would try to build the number (and run out of memory).
const maxShift = 1 << 20

//rego:builtin bits.lsh
func (ev *Eval) BiBitsLsh(a, b *V) *V {
	x, ok1 := bigIntOperand(a)
	y, ok2 := bigIntOperand(b)
	if !ok1 || !ok2 || y.Sign() < 0 {
		return nil
	}
	if !y.IsUint64() || y.Uint64() > maxShift {
		if x.Sign() == 0 {
			return ev.Int(0)
		}
		failWith(BuiltinError, "bits.lsh: shift too large")
	}
	return ev.fromBigInt(new(big.Int).Lsh(x, uint(y.Uint64())))
}

//rego:builtin bits.rsh
func (ev *Eval) BiBitsRsh(a, b *V) *V {
	x, ok1 := bigIntOperand(a)
	y, ok2 := bigIntOperand(b)
	if !ok1 || !ok2 || y.Sign() < 0 {
		return nil
	}
	return ev.fromBigInt(new(big.Int).Rsh(x, uint(y.Uint64())))
}

//rego:builtin format_int
func (ev *Eval) BiFormatInt(a, b *V) *V {
	if a.Kind() != KNum || b.Kind() != KNum {
		return nil
	}
	var format string
	var radix int
	switch numText(b) {
	case "2":
		format, radix = "%b", 2
	case "8":
		format, radix = "%o", 8
	case "10":
		if i, ok := numInt64(a); ok {
			return ev.String(strconv.FormatInt(i, 10))
		}
		format, radix = "%d", 10
	case "16":
		format, radix = "%x", 16
	default:
		return nil
	}
	text := numText(a)
	if i, ok := new(big.Int).SetString(text, 10); ok {
		return ev.String(i.Text(radix))
	}
	i, _ := toBigFloat(a).Int(nil)
	return ev.String(fmt.Sprintf(format, i))
}
