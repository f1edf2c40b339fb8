package rt

import (
	"math"
	"math/big"
	"strconv"
	"strings"
)

// Numbers are an int64 (s == "") or their JSON text. Arithmetic mirrors topdown: ints in
// the int32 window are added, multiplied… as int64; other integers exactly as big.Int;
// anything else as big.Float with the default 64-bit mantissa, printed as topdown prints
// it (Text 'f' for integral values, 'g' otherwise, shortest).

// numText returns a number's JSON text.
func numText(v *V) string {
	if v.s != "" {
		return v.s
	}
	return strconv.FormatInt(v.n, 10)
}

func appendNum(dst []byte, v *V) []byte {
	if v.s != "" {
		return append(dst, v.s...)
	}
	return strconv.AppendInt(dst, v.n, 10)
}

// numInt64 is ast.Number.Int64 (util.Atoi64): "1.0" and "+1" are 1, "1e3" is not an int.
func numInt64(v *V) (int64, bool) {
	if v.s == "" {
		return v.n, true
	}
	return atoi64(v.s)
}

func atoi64(s string) (int64, bool) {
	if len(s) == 0 {
		return 0, false
	}
	neg := s[0] == '-'
	if neg || s[0] == '+' {
		s = s[1:]
	}
	if len(s) == 0 || len(s) > 19 {
		return 0, false
	}
	var n int64
	past := false
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if ch == '.' {
			if past {
				return 0, false
			}
			past = true
			continue
		}
		ch -= '0'
		if past {
			if ch == 0 {
				continue
			}
			return 0, false
		}
		if ch > 9 {
			return 0, false
		}
		n = n*10 + int64(ch)
	}
	if !neg && n < 0 {
		return 0, false
	}
	if neg {
		n = -n
		if n > 0 {
			return 0, false
		}
	}
	return n, true
}

// smallInt is topdown's window of exact int64 arithmetic.
func smallInt(v *V) (int64, bool) {
	i, ok := numInt64(v)
	return i, ok && i >= math.MinInt32 && i <= math.MaxInt32
}

// toBigInt is builtins.NumberToInt.
func toBigInt(v *V) (*big.Int, bool) {
	if v.s == "" {
		return big.NewInt(v.n), true
	}
	if i, ok := new(big.Int).SetString(v.s, 10); ok {
		return i, true
	}
	r, ok := new(big.Rat).SetString(v.s)
	if !ok || !r.IsInt() {
		return nil, false
	}
	return new(big.Int).Set(r.Num()), true
}

// toBigFloat is builtins.NumberToFloat.
func toBigFloat(v *V) *big.Float {
	f, ok := new(big.Float).SetString(numText(v))
	if !ok {
		return new(big.Float)
	}
	return f
}

func (ev *Eval) fromBigInt(i *big.Int) *V {
	if i.IsInt64() {
		return ev.Int(i.Int64())
	}
	return ev.numText(i.String())
}

// fromBigFloat is builtins.FloatToNumber.
func (ev *Eval) fromBigFloat(f *big.Float) *V {
	format := byte('g')
	if f.IsInt() {
		format = 'f'
	}
	return ev.numText(f.Text(format, -1))
}

// numText makes a number from text, as an int64 when the text is the plain decimal form.
func (ev *Eval) numText(text string) *V {
	if n, ok := plainInt(text); ok {
		return ev.Int(n)
	}
	v := ev.node()
	v.k, v.s = KNum, text
	return v
}

// numCompare is ast.NumberCompare.
func numCompare(a, b *V) int {
	if a.s == "" && b.s == "" {
		return cmpInt(a.n, b.n)
	}
	xs, ys := numText(a), numText(b)
	if xs == ys {
		return 0
	}
	if x, ok := atoi64(xs); ok {
		if y, ok := atoi64(ys); ok {
			return cmpInt(x, y)
		}
	}
	// ast.NumberCompare compares exactly (as decimals, then rationals), except that two
	// non-integral numbers equal as float64 are equal when either has more than 19
	// significant digits.
	if !(decimalDigits(xs) <= 19 && decimalDigits(ys) <= 19) && nonIntegral(xs) && nonIntegral(ys) {
		xf, err1 := strconv.ParseFloat(xs, 64)
		yf, err2 := strconv.ParseFloat(ys, 64)
		if err1 == nil && err2 == nil && xf == yf {
			return 0
		}
	}
	x, ok1 := new(big.Rat).SetString(xs)
	y, ok2 := new(big.Rat).SetString(ys)
	if !ok1 || !ok2 {
		return strings.Compare(xs, ys)
	}
	return x.Cmp(y)
}

// decimalDigits counts the significant digits of a number's text (ast's parseDecimal
// gives up beyond 19); 100 for text it would not parse.
func decimalDigits(s string) int {
	i := 0
	if i < len(s) && (s[i] == '-' || s[i] == '+') {
		i++
	}
	digits, started, seenDot := 0, false, false
	for ; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			if started || c != '0' {
				started = true
				digits++
			}
		case c == '.' && !seenDot:
			seenDot = true
		case c == 'e' || c == 'E':
			rest := s[i+1:]
			if len(rest) > 0 && (rest[0] == '-' || rest[0] == '+') {
				rest = rest[1:]
			}
			if len(rest) == 0 || len(rest) > 9 {
				return 100
			}
			return digits
		default:
			return 100
		}
	}
	return digits
}

// nonIntegral is ast.NumberCompare's test of a number written with a fraction that is
// not all zeros.
func nonIntegral(s string) bool {
	if strings.IndexByte(s, '.') < 0 {
		return false
	}
	t := strings.TrimRight(s, ".0")
	return t != s && strings.IndexByte(t, '.') >= 0
}

type arithOp struct {
	small func(x, y int64) (int64, bool, bool) // result, is an int, defined
	// exact64 is exact on int64s: the result, whether it is defined, whether it fits (no
	// overflow). It gives what exact would, without a big.Int.
	exact64 func(x, y int64) (int64, bool, bool)
	exact   func(z, x, y *big.Int) (*big.Int, bool)
	float   func(z, x, y *big.Float) (*big.Float, bool)
}

func (ev *Eval) arith(op *arithOp, a, b *V) *V {
	if a == nil || b == nil || a.k != KNum || b.k != KNum {
		return nil
	}
	if x, ok := smallInt(a); ok {
		if y, ok := smallInt(b); ok {
			r, isInt, ok := op.small(x, y)
			if !ok {
				return nil
			}
			if isInt {
				return ev.Int(r)
			}
		}
	}
	if op.exact64 != nil {
		if x, ok := numInt64(a); ok {
			if y, ok := numInt64(b); ok {
				if r, defined, fits := op.exact64(x, y); fits {
					if !defined {
						return nil
					}
					return ev.Int(r)
				}
			}
		}
	}
	if op.exact != nil {
		if x, ok := toBigInt(a); ok {
			if y, ok := toBigInt(b); ok {
				r, ok := op.exact(new(big.Int), x, y)
				if !ok {
					return nil
				}
				return ev.fromBigInt(r)
			}
		}
	}
	if op.float == nil {
		return nil
	}
	r, ok := op.float(new(big.Float), toBigFloat(a), toBigFloat(b))
	if !ok {
		return nil
	}
	return ev.fromBigFloat(r)
}

var (
	opPlus = arithOp{
		small: func(x, y int64) (int64, bool, bool) { return x + y, true, true },
		exact64: func(x, y int64) (int64, bool, bool) {
			r := x + y
			return r, true, (r > x) == (y > 0)
		},
		exact: func(z, x, y *big.Int) (*big.Int, bool) { return z.Add(x, y), true },
		float: func(z, x, y *big.Float) (*big.Float, bool) { return z.Add(x, y), true },
	}
	opMinus = arithOp{
		small: func(x, y int64) (int64, bool, bool) { return x - y, true, true },
		exact64: func(x, y int64) (int64, bool, bool) {
			r := x - y
			return r, true, (r < x) == (y > 0)
		},
		exact: func(z, x, y *big.Int) (*big.Int, bool) { return z.Sub(x, y), true },
		float: func(z, x, y *big.Float) (*big.Float, bool) { return z.Sub(x, y), true },
	}
	opMul = arithOp{
		small: func(x, y int64) (int64, bool, bool) { return x * y, true, true },
		exact64: func(x, y int64) (int64, bool, bool) {
			if x == 0 || y == 0 {
				return 0, true, true
			}
			r := x * y
			return r, true, r/y == x && !(x == -1 && y == math.MinInt64) && !(y == -1 && x == math.MinInt64)
		},
		exact: func(z, x, y *big.Int) (*big.Int, bool) { return z.Mul(x, y), true },
		float: func(z, x, y *big.Float) (*big.Float, bool) { return z.Mul(x, y), true },
	}
	opDiv = arithOp{
		small: func(x, y int64) (int64, bool, bool) {
			if y == 0 {
				return 0, false, false
			}
			return x / y, x != 0 && x%y == 0, true
		},
		float: func(z, x, y *big.Float) (*big.Float, bool) {
			if i, acc := y.Int64(); acc == big.Exact && i == 0 {
				return nil, false
			}
			return z.Quo(x, y), true
		},
	}
	opRem = arithOp{
		small: func(x, y int64) (int64, bool, bool) {
			if y == 0 {
				return 0, false, false
			}
			return x % y, true, true
		},
		exact64: func(x, y int64) (int64, bool, bool) {
			if y == 0 {
				return 0, false, true
			}
			if y == -1 {
				return 0, true, true
			}
			return x % y, true, true
		},
		exact: func(z, x, y *big.Int) (*big.Int, bool) {
			if y.Sign() == 0 {
				return nil, false
			}
			return z.Rem(x, y), true
		},
	}
)

// Plus and friends are the arithmetic built-ins (undefined on a type or domain error).
func (ev *Eval) Plus(a, b *V) *V {
	if a != nil && b != nil && a.k == KNum && b.k == KNum && a.s == "" && b.s == "" &&
		a.n >= math.MinInt32 && a.n <= math.MaxInt32 && b.n >= math.MinInt32 && b.n <= math.MaxInt32 {
		return ev.Int(a.n + b.n)
	}
	return ev.arith(&opPlus, a, b)
}

func (ev *Eval) Mul(a, b *V) *V   { return ev.arith(&opMul, a, b) }
func (ev *Eval) Div(a, b *V) *V   { return ev.arith(&opDiv, a, b) }
func (ev *Eval) Rem(a, b *V) *V   { return ev.arith(&opRem, a, b) }
func (ev *Eval) Sub(a, b *V) *V   { return ev.arith(&opMinus, a, b) }
func (ev *Eval) Minus(a, b *V) *V { return ev.minus(a, b) }

func (ev *Eval) minus(a, b *V) *V {
	if a == nil || b == nil {
		return nil
	}
	if a.k == KNum && b.k == KNum {
		if a.s == "" && b.s == "" && a.n >= math.MinInt32 && a.n <= math.MaxInt32 && b.n >= math.MinInt32 && b.n <= math.MaxInt32 {
			return ev.Int(a.n - b.n)
		}
		return ev.arith(&opMinus, a, b)
	}
	if a.k == KSet && b.k == KSet {
		out := ev.Set(len(a.a))
		for _, x := range a.a {
			if _, ok := search(b.a, x); !ok {
				out.a = append(out.a, x)
			}
		}
		return out
	}
	return nil
}

type unaryOp func(x *big.Float) *big.Float

func (ev *Eval) unary(op unaryOp, small func(int64) int64, a *V) *V {
	if a == nil || a.k != KNum {
		return nil
	}
	if x, ok := smallInt(a); ok {
		return ev.Int(small(x))
	}
	return ev.fromBigFloat(op(toBigFloat(a)))
}

func identity(x int64) int64 { return x }

var half = big.NewFloat(0.5)

func (ev *Eval) Abs(a *V) *V {
	return ev.unary(func(x *big.Float) *big.Float { return x.Abs(x) }, func(x int64) int64 { return max(x, -x) }, a)
}

func (ev *Eval) Round(a *V) *V {
	return ev.unary(func(a *big.Float) *big.Float {
		var i *big.Int
		if a.Signbit() {
			i, _ = new(big.Float).Sub(a, half).Int(nil)
		} else {
			i, _ = new(big.Float).Add(a, half).Int(nil)
		}
		return new(big.Float).SetInt(i)
	}, identity, a)
}

func (ev *Eval) Ceil(a *V) *V {
	return ev.unary(func(a *big.Float) *big.Float {
		i, _ := a.Int(nil)
		f := new(big.Float).SetInt(i)
		if f.Signbit() || a.Cmp(f) == 0 {
			return f
		}
		return new(big.Float).Add(f, big.NewFloat(1.0))
	}, identity, a)
}

func (ev *Eval) Floor(a *V) *V {
	return ev.unary(func(a *big.Float) *big.Float {
		i, _ := a.Int(nil)
		f := new(big.Float).SetInt(i)
		if !f.Signbit() || a.Cmp(f) == 0 {
			return f
		}
		return new(big.Float).Sub(f, big.NewFloat(1.0))
	}, identity, a)
}

// intOperand is builtins.IntOperand: an integer number fitting an int.
func intOperand(v *V) (int, bool) {
	if v == nil || v.k != KNum {
		return 0, false
	}
	i, ok := numInt64(v)
	return int(i), ok
}
