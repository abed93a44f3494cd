package chstore

import (
	"strings"
	"unicode"
)

// readOnlyVerbs are the statements an analyst may run: each only reads.
var readOnlyVerbs = map[string]bool{
	"SELECT": true, "WITH": true, "SHOW": true, "DESCRIBE": true, "DESC": true, "EXPLAIN": true,
}

// checkAnalystStatement accepts a single read-only statement and returns it
// without its trailing ';'. It is the first of two locks: the server also
// runs the statement with readonly=1. The lexer knows quotes and comments
// well enough that a ';' or keyword inside them is not mistaken for code;
// where it reads the text differently from the server (nested comments), it
// errs towards refusing.
func checkAnalystStatement(sql string) (string, error) {
	toks, err := lexSQL(sql)
	if err != nil {
		return "", err
	}
	stmt := sql
	if n := len(toks); n > 0 && toks[n-1].text == ";" {
		stmt = sql[:toks[n-1].off]
		toks = toks[:n-1]
	}
	i := 0
	for i < len(toks) && toks[i].text == "(" {
		i++
	}
	if i == len(toks) {
		return "", invalidf("empty statement")
	}
	if !readOnlyVerbs[strings.ToUpper(toks[i].text)] {
		return "", invalidf("only SELECT, WITH, SHOW, DESCRIBE and EXPLAIN statements may run, not %q", toks[i].text)
	}
	for i, t := range toks {
		if t.text == ";" {
			return "", invalidf("only a single statement may run")
		}
		if strings.EqualFold(t.text, "INTO") && i+1 < len(toks) && strings.EqualFold(toks[i+1].text, "OUTFILE") {
			return "", invalidf("INTO OUTFILE is not allowed")
		}
	}
	return strings.TrimSpace(stmt), nil
}

// sqlToken is a word, a quoted literal or identifier, or one punctuation
// byte, at offset off of the statement.
type sqlToken struct {
	text string
	off  int
}

// lexSQL splits sql into tokens, skipping blanks and comments.
func lexSQL(sql string) ([]sqlToken, error) {
	var toks []sqlToken
	for i := 0; i < len(sql); {
		c := sql[i]
		j := i + 1
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			i = j
			continue
		case strings.HasPrefix(sql[i:], "--"):
			k := strings.IndexByte(sql[i:], '\n')
			if k < 0 {
				return toks, nil
			}
			i += k + 1
			continue
		case strings.HasPrefix(sql[i:], "/*"):
			k := strings.Index(sql[i+2:], "*/")
			if k < 0 {
				return nil, invalidf("unterminated comment")
			}
			i += 2 + k + 2
			continue
		case c == '\'' || c == '"' || c == '`':
			var err error
			if j, err = skipQuoted(sql, i); err != nil {
				return nil, err
			}
		case isWordByte(c):
			for j < len(sql) && isWordByte(sql[j]) {
				j++
			}
		}
		toks = append(toks, sqlToken{text: sql[i:j], off: i})
		i = j
	}
	return toks, nil
}

// skipQuoted returns the offset just after the quoted literal or identifier
// starting at sql[i]. Both escapes ClickHouse knows are honoured: a
// backslash, and the quote doubled.
func skipQuoted(sql string, i int) (int, error) {
	q := sql[i]
	for j := i + 1; j < len(sql); j++ {
		switch sql[j] {
		case '\\':
			j++
		case q:
			if j+1 < len(sql) && sql[j+1] == q {
				j++
				continue
			}
			return j + 1, nil
		}
	}
	return 0, invalidf("unterminated %c quote", q)
}

func isWordByte(c byte) bool {
	return c == '_' || c >= 0x80 || unicode.IsLetter(rune(c)) || unicode.IsDigit(rune(c))
}
