main: main.o
	$(CC) $< -o $@

main.s: main.c
	$(CC) -S $< -o $@

main.o: main.s
	$(CC) -c $< -o $@

main.c:
	echo "int main() { return 0; }" > $@

clean:
	rm -f main main.o main.s main.c
