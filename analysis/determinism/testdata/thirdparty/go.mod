// Another module: the analyzer does not follow calls into it.
module example.com/thirdparty

go 1.26
