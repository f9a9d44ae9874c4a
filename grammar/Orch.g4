// The .orch pipeline language (contract: docs/language.md). One file declares one pipeline.
grammar Orch;

file
    : pipelineDecl statement* EOF
    ;

pipelineDecl
    : PIPELINE name=IDENT ';'
    ;

statement
    : paramDecl
    | sourceDecl
    | callDecl
    | sinkDecl
    | bindingDecl
    | operatorDecl
    ;

paramDecl
    : PARAM name=IDENT ':' typeExpr '=' literal ';'
    ;

sourceDecl
    : SOURCE name=IDENT '=' operatorName '(' arguments? ')' (AS domain=IDENT)? ';'
    ;

callDecl
    : CALL name=IDENT '=' operatorName '(' arguments? ')' callOptions? ';'
    ;

sinkDecl
    : SINK operatorName '(' arguments? ')' callOptions? ';'
    ;

bindingDecl
    : name=IDENT (':' typeExpr)? '=' expr ';'
    ;

// An operator the program brings (docs/python.md):
//   operator quality.score(text: String, const threshold: Float = 0.5) -> Float
//       = python("models/quality.py", class: "Scorer");
operatorDecl
    : OPERATOR operatorName '(' (operatorParam (',' operatorParam)* ','?)? ')'
      '->' result=typeExpr '=' runner=IDENT '(' (runnerArgument (',' runnerArgument)* ','?)? ')' ';'
    ;

// `grouped prompt: String`: an input whose batches hold one value each (the one modifier).
operatorParam
    : CONST? modifier=IDENT? name=IDENT ':' typeExpr ('=' literal)?
    ;

// `reduce(x, failed: "skip")`: how a reduce treats its failed members.
reduceOption
    : name=IDENT ':' value=expr
    ;

runnerArgument
    : (name=IDENT ':')? (literal | list='[' (literal (',' literal)* ','?)? ']')
    ;

expr
    : EXPAND '(' expr ')' AS domain=IDENT                    # expandExpr
    | REDUCE '(' expr (',' reduceOption)* ','? ')'           # reduceExpr
    | FILTER '(' value=expr ',' mask=expr ')'                # filterExpr
    | BROADCAST '(' value=expr ',' like=expr ')'             # broadcastExpr
    | operatorName '(' arguments? ')' callOptions?               # invokeExpr
    | expr '.' field=IDENT                                   # projectionExpr
    | '{' (recordField (',' recordField)* ','?)? '}'         # recordExpr
    | '(' expr ')'                                           # parenExpr
    | literal                                                # literalExpr
    | IDENT                                                  # nameExpr
    // Operators, tightest first (ANTLR gives earlier alternatives higher precedence).
    | value=expr AS type=typeExpr                            # castExpr
    | op='-' operand=expr                                    # negateExpr
    | left=expr op=('*' | '/' | '%') right=expr              # multiplicativeExpr
    | left=expr op=('+' | '-') right=expr                    # additiveExpr
    | left=expr op=('<' | '<=' | '>' | '>=') right=expr      # relationalExpr
    | left=expr op=('==' | '!=') right=expr                  # equalityExpr
    | op=NOT operand=expr                                    # notExpr
    | left=expr op=AND right=expr                            # andExpr
    | left=expr op=OR right=expr                             # orExpr
    | IF condition=expr THEN then=expr ELSE otherwise=expr   # conditionalExpr
    ;

// `ocr` (a declared Call) or `pdf.render` (an operator of the registry).
operatorName
    : IDENT ('.' IDENT)*
    ;

arguments
    : argument (',' argument)* ','?
    ;

argument
    : (name=IDENT ':')? expr
    ;

recordField
    : name=IDENT ':' expr
    ;

callOptions
    : '{' (callOption (',' callOption)* ','?)? '}'
    ;

callOption
    : name=IDENT ':' expr
    ;

typeExpr
    : IDENT ('<' typeExpr (',' typeExpr)* '>')?              # namedType
    | '{' (typeField (',' typeField)* ','?)? '}'             # recordType
    ;

typeField
    : name=IDENT ':' typeExpr
    ;

literal
    : STRING                                                 # stringLiteral
    | '-'? INT                                               # intLiteral
    | '-'? FLOAT                                             # floatLiteral
    | (TRUE | FALSE)                                         # boolLiteral
    | DURATION                                               # durationLiteral
    | SIZE                                                   # sizeLiteral
    ;

SEMI      : ';';  // named: the frontend resynchronizes on it after a syntax error
PIPELINE  : 'pipeline';
PARAM     : 'param';
SOURCE    : 'source';
CALL      : 'call';
SINK      : 'sink';
OPERATOR  : 'operator';
CONST     : 'const';
AS        : 'as';
EXPAND    : 'expand';
REDUCE    : 'reduce';
FILTER    : 'filter';
BROADCAST : 'broadcast';
AND       : 'and';
OR        : 'or';
NOT       : 'not';
IF        : 'if';
THEN      : 'then';
ELSE      : 'else';
TRUE      : 'true';
FALSE     : 'false';

// Longest match makes `30s`, `250ms` and `512MB` single tokens rather than a number and a name.
DURATION : DIGITS ('.' DIGITS)? ('ms' | 's' | 'm' | 'h');
SIZE     : DIGITS ('B' | 'KB' | 'MB' | 'GB' | 'TB' | 'KiB' | 'MiB' | 'GiB' | 'TiB');
FLOAT    : DIGITS '.' DIGITS EXPONENT? | DIGITS EXPONENT;
INT      : DIGITS;
// Escapes are checked by the frontend, which can point at the bad one.
STRING   : '"' ('\\' ~[\r\n] | ~["\\\r\n])* '"';
// A string that reaches the end of its line without a closing quote; reported by the frontend.
UNTERMINATED_STRING : '"' ('\\' ~[\r\n] | ~["\\\r\n])* '\\'?;
IDENT    : [a-zA-Z_] [a-zA-Z_0-9]*;

LINE_COMMENT  : '//' ~[\r\n]* -> channel(HIDDEN);
BLOCK_COMMENT : '/*' .*? '*/' -> channel(HIDDEN);
// A block comment that reaches the end of the file; reported by the frontend. It must not
// contain `*/`, or longest match would prefer it to every closed block comment.
UNTERMINATED_BLOCK_COMMENT : '/*' (~'*' | '*'+ ~[*/])* '*'* EOF;
WHITESPACE    : [ \t\r\n]+ -> channel(HIDDEN);

fragment DIGITS   : [0-9]+ ('_' [0-9]+)*;
fragment EXPONENT : [eE] [+-]? [0-9]+;
