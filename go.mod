module github.com/stela-dev/stela

go 1.26

require github.com/oklog/ulid/v2 v2.1.2
