module peers/ratio

go 1.26
